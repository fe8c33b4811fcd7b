-- Measurement only, not a proposal: drops every CHECK constraint on workhorse.job and
-- workhorse.key_binding in this contender's database, to show what they cost an accept.
-- PostgreSQL prepares CHECK expressions again for every INSERT statement (stringToNode, planning,
-- ExecInitExpr per executor start), which a one-row INSERT cannot amortise. The contract (docs/enqueue.md) wants the
-- bounds enforced in PostgreSQL, so the fix to test next is cheaper enforcement (domains, whose
-- checks are prepared once per backend), not removal.
do $$
declare c record;
begin
  for c in select conrelid::regclass::text as rel, conname from pg_constraint
            where contype = 'c'
              and conrelid in ('workhorse.job'::regclass, 'workhorse.key_binding'::regclass)
  loop
    execute format('alter table %s drop constraint %I', c.rel, c.conname);
  end loop;
end $$;
