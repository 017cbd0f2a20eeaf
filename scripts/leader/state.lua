-- Leader election: the role's current state, for observers.
-- KEYS[1] holder, KEYS[2] term counter.
-- Reply: {last term handed out (0: none), current term (0: nobody leads),
-- the holder's PTTL (-2: none), value ('' when nobody leads)}. The owner
-- id is not returned: it is a secret in effect.
local last = tonumber(redis.call('get', KEYS[2]) or '0') or 0
local term = redis.call('hget', KEYS[1], 'term')
if not term then
  return {last, 0, -2, ''}
end
return {last, tonumber(term), redis.call('pttl', KEYS[1]),
        redis.call('hget', KEYS[1], 'value') or ''}
