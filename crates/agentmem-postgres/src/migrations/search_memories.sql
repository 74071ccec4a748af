-- The agent's facts and episodes as documents of its history index, beside
-- its events (kind 'fact' or 'episode', numbered in the same sequence), as
-- the files backend's index keeps them: replaced together whenever they
-- change. Per agent: the version of them indexed (`stamp`), and their own
-- BM25 statistics (they are ranked among themselves, not among events).
CREATE TABLE agentmem_search_memories (
    agent_id text   PRIMARY KEY,
    stamp    text   NOT NULL,
    docs     bigint NOT NULL,
    tokens   bigint NOT NULL
);
-- Their words, apart from the events' (a handful of rows, not the history).
CREATE INDEX agentmem_search_docs_memory_lexemes
    ON agentmem_search_docs USING gin (lexemes) WHERE kind <> 'event';
CREATE INDEX agentmem_search_docs_memories
    ON agentmem_search_docs (agent_id, doc) WHERE kind <> 'event';
-- Scoring reads each matching document's tsvector whole: compressed with
-- LZ4 it decompresses several times faster than with PostgreSQL's own
-- pglz (new rows only; a server built without LZ4 keeps pglz).
DO $$
BEGIN
    ALTER TABLE agentmem_search_docs
        ALTER COLUMN lexemes SET COMPRESSION lz4,
        ALTER COLUMN text SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
