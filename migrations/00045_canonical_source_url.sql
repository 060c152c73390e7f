-- +goose Up

-- Source server URLs are stored canonical (issue 31, CONTRACT.md "Provider access"): lower-case
-- scheme and host, the scheme's default port dropped, no trailing slash, as
-- domain/provider.CanonicalServerURL writes them. A connection registered as
-- "https://GitHub.com:443/" becomes "https://github.com", so an erasure for https://github.com
-- matches its deliveries.
--
-- canonical_source_url is the same rule in SQL for the URLs that connection creation ever
-- accepted (an http(s) URL with a DNS name, IPv4 or IPv6 host, an optional port and a plain
-- path). A value of another shape is answered unchanged. It stays after this migration: person
-- erasure canonicalises the Hephaestus-Source-Server-Url header of inbox rows admitted before
-- it (or by a server of the previous version during a rolling upgrade) when it matches them.
-- specs/management compares it with the Go canonicaliser.
CREATE FUNCTION canonical_source_url(u text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE
        WHEN m IS NULL OR (m[3] IS NOT NULL AND m[3]::integer NOT BETWEEN 1 AND 65535) THEN u
        ELSE lower(m[1]) || '://' || lower(m[2])
            || CASE
                   WHEN m[3] IS NULL THEN ''
                   WHEN lower(m[1]) = 'https' AND m[3]::integer = 443 THEN ''
                   WHEN lower(m[1]) = 'http' AND m[3]::integer = 80 THEN ''
                   ELSE ':' || m[3]::integer::text
               END
            || rtrim(coalesce(m[4], ''), '/')
    END
    FROM (SELECT regexp_match(u,
        '^(https?)://([A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?(/[A-Za-z0-9._~!$&''()*+,;=:@%/-]*)?$',
        'i') AS m) AS parsed
$$;

-- Two connections may canonicalise to one URL (one typed https://GitHub.com, the other
-- https://github.com/): they then share a namespace, which is what they always named. No unique
-- index involves source_server_url (uq_connection_installation and uq_connection_slack_team key
-- on source_key), so the rewrite cannot collide; the shared values are reported all the same.
-- +goose StatementBegin
DO $$
DECLARE
    d record;
BEGIN
    FOR d IN
        SELECT c.id, canonical_source_url(c.source_server_url) AS canonical
        FROM connection c
        WHERE c.source_server_url IS DISTINCT FROM canonical_source_url(c.source_server_url)
        ORDER BY c.id
    LOOP
        RAISE NOTICE 'connection %: source server url stored canonical (% other connection(s) already had it)', d.id,
            (SELECT count(*) FROM connection o WHERE o.id <> d.id AND o.source_server_url = d.canonical);
    END LOOP;
END
$$;
-- +goose StatementEnd

UPDATE connection SET source_server_url = canonical_source_url(source_server_url), updated_at = now()
WHERE source_server_url IS DISTINCT FROM canonical_source_url(source_server_url);

UPDATE inbox_erasure SET source_server_url = canonical_source_url(source_server_url), updated_at = now()
WHERE source_server_url IS DISTINCT FROM canonical_source_url(source_server_url);

-- +goose Down
-- The original spellings are not kept: the rows stay canonical.
DROP FUNCTION canonical_source_url(text);
