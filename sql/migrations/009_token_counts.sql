-- 009_token_counts: token counts computed once per text and model. A text is keyed by the
-- md5 of its UTF-8 bytes; compression_health, its context check and `context` read counts
-- from here and count only texts never seen (one edited note costs its own counts).

CREATE TABLE token_counts (
    hash            VARCHAR NOT NULL,      -- md5 of the text
    model           VARCHAR NOT NULL,      -- target model whose tokenizer counted it
    tokens          INTEGER NOT NULL,
    PRIMARY KEY (hash, model)
);
