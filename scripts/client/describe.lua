-- Reads a client's description (lk_client_describe_owner, docs/owners.md).
-- Writes nothing. KEYS[1] latchkey_client:{ID}.
-- Reply: {PTTL, {field, value, ...}}; PTTL -2 and no fields: none kept.
return {redis.call('pttl', KEYS[1]), redis.call('hgetall', KEYS[1])}
