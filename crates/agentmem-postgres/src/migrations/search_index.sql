-- The history index: one row per event of every session (archive included),
-- numbered per agent in the order indexed, its words as a tsvector (the
-- lexemes of the engine's FTS5 tokenizer, one position per occurrence so a
-- lexeme's count is its term frequency) under a GIN index.
CREATE TABLE agentmem_search_docs (
    agent_id   text     NOT NULL,
    doc        bigint   NOT NULL,
    kind       text     NOT NULL,
    ref        text     NOT NULL,
    session_id text     NOT NULL,
    ord        bigint   NOT NULL,
    turn       text     NOT NULL,
    role       text     NOT NULL,
    ts         float8   NOT NULL,
    salience   float8   NOT NULL,
    speaker    text     NOT NULL,
    text       text     NOT NULL,
    lexemes    tsvector NOT NULL,
    length     integer  NOT NULL,
    PRIMARY KEY (agent_id, doc),
    UNIQUE (agent_id, kind, session_id, ref)
);
CREATE INDEX agentmem_search_docs_position
    ON agentmem_search_docs (agent_id, session_id, ord) WHERE kind = 'event';
CREATE INDEX agentmem_search_docs_lexemes ON agentmem_search_docs USING gin (lexemes);

-- Per session: events indexed and their tokens (BM25's document count and
-- average length are their sums over the agent's sessions).
CREATE TABLE agentmem_search_sessions (
    agent_id   text   NOT NULL,
    session_id text   NOT NULL,
    events     bigint NOT NULL,
    tokens     bigint NOT NULL,
    PRIMARY KEY (agent_id, session_id)
);

CREATE TABLE agentmem_search_speakers (
    agent_id text NOT NULL,
    name     text NOT NULL,
    PRIMARY KEY (agent_id, name)
);

-- Vectors at unit length, one signed byte a dimension, compared by an
-- exact scan (no pgvector: see the README).
CREATE TABLE agentmem_search_vectors (
    agent_id   text   NOT NULL,
    model      text   NOT NULL,
    doc        bigint NOT NULL,
    kind       text   NOT NULL,
    session_id text   NOT NULL,
    vector     bytea  NOT NULL,
    PRIMARY KEY (agent_id, model, doc),
    FOREIGN KEY (agent_id, doc) REFERENCES agentmem_search_docs (agent_id, doc) ON DELETE CASCADE
);
CREATE TABLE agentmem_search_embedded (
    agent_id text   NOT NULL,
    model    text   NOT NULL,
    through  bigint NOT NULL,
    PRIMARY KEY (agent_id, model)
);

-- FTS5's bm25() for one document: the sum over the query's lexemes it holds
-- of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl)),
-- k1 = 1.2, b = 0.75, the idfs computed by the caller as FTS5 does.
CREATE FUNCTION agentmem_bm25(lexemes tsvector, length integer, terms text[],
                              idfs float8[], avgdl float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(q.idf * (cardinality(u.positions) * (1.2::float8 + 1.0::float8))
                        / (cardinality(u.positions)
                           + 1.2::float8 * (1.0::float8 - 0.75::float8
                                            + 0.75::float8 * length / avgdl))), 0)
    FROM unnest(ts_filter(setweight(setweight(lexemes, 'D'), 'A', terms), '{a}')) AS u
    JOIN unnest(terms, idfs) AS q(term, idf) ON q.term = u.lexeme
$$;
