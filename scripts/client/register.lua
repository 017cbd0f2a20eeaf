-- Owner descriptions (docs/owners.md): writes this client's description and
-- its TTL in one step, so the key never lives without one. Sent when the
-- client starts and again every lease / 3; each write is whole, so a key
-- lost with a restarted server comes back with the next one.
-- KEYS[1] latchkey_client:{ID}; ARGV[1] TTL in ms; ARGV[2..] field, value
-- pairs. Reply: 1.
redis.call('hset', KEYS[1], unpack(ARGV, 2))
redis.call('pexpire', KEYS[1], ARGV[1])
return 1
