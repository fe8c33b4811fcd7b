-- Which database an operator action ran on, as the console that ran it names it (docs/console.md,
-- "Several databases"): one console may serve production, staging and each region, and an audit row
-- read out of its database (an export, a log shipper) must still say where it was written. The
-- console sets `workhorse.database` on each of its connections; rows written on other connections
-- (scripts, the API, a worker) leave it null. Taken from the session, so every function that audits
-- (sql/functions) records it without a change. Rows written before this migration stay null: the
-- column is added first without a default, so no existing row takes the migrating session's value.
-- On the distributed layout (Citus) operator_audit is a local table on the coordinator.
alter table workhorse.operator_audit add column if not exists database text;
alter table workhorse.operator_audit
  alter column database set default nullif(current_setting('workhorse.database', true), '');
