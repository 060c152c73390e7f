-- +goose Up

-- The W3C traceparent of the webhook request span that admitted the row (issue 36): each
-- attempt's span is a child of it, so an attempt hours later, on another server, joins the
-- delivery's trace. NULL when the admitting server traced nothing (no OTEL_* exporter) and for
-- rows admitted before this migration. A nullable column without a default: adding it rewrites
-- nothing. The length bound keeps a malformed value from growing the row (version 00 is 55
-- characters).
ALTER TABLE provider_event ADD COLUMN trace_parent text
    CONSTRAINT ck_provider_event_trace_parent CHECK (length(trace_parent) <= 64);

-- +goose Down
ALTER TABLE provider_event DROP COLUMN trace_parent;
