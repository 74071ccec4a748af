-- The history index's term statistics, kept with its documents: for each
-- agent and lexeme, how many of its indexed events hold the lexeme (BM25's
-- document frequency, a lookup instead of a count over the documents).
CREATE TABLE agentmem_search_terms (
    agent_id text   NOT NULL,
    lexeme   text   NOT NULL,
    docs     bigint NOT NULL,
    PRIMARY KEY (agent_id, lexeme)
);
INSERT INTO agentmem_search_terms (agent_id, lexeme, docs)
SELECT d.agent_id, u.lexeme, count(*)
FROM agentmem_search_docs d, unnest(d.lexemes) AS u
WHERE d.kind = 'event'
GROUP BY d.agent_id, u.lexeme;
