-- Owner descriptions (docs/owners.md): a clean close deletes the client's
-- description (a script, not DEL, so the ACL recipe in docs/client.md
-- needs no command of its own for it). KEYS[1] latchkey_client:{ID}.
redis.call('del', KEYS[1])
return 1
