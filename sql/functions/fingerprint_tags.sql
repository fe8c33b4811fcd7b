-- Tags as the fingerprint holds them: distinct, sorted bytewise, as a JSON array ('["a","b"]').
-- Its own function (with a subquery, so not inlined): request_field_digests.sql stays one inlined
-- expression and calls it only for a request with tags.
create or replace function workhorse.fingerprint_tags(p_tags text[])
returns text language sql immutable parallel safe as $$
  select to_json(array(select distinct t collate "C" from unnest(p_tags) t order by 1))::text
$$;
