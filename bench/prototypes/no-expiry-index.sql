-- Measurement only: 006's shape without key_binding_expires_idx (the binding's primary key is its
-- only index), to show what the index that cleanup and the expired-bindings page walk costs an accept.
drop index workhorse.key_binding_expires_idx;
