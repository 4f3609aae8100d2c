#!lua name=idgen
-- idgen's Functions library: Snowflake IDs and date sequences on a Redis that cannot load the
-- module (managed services), installed with FUNCTION LOAD REPLACE. Every key a function
-- touches is one of the keys it is given. docs/library.md says what it keeps of the module's
-- guarantees and what it cannot.
--
-- What a Lua function cannot keep, it replaces:
-- * No witness file: what a restart, a failover or a lost write may take back is covered by a
--   fence at every change of the process that writes a key. Each key records the server
--   process that wrote it last (its run_id, which a restart changes, and the promotions it
--   went through); a process that finds another's mark starts
--   Snowflake IDs above that process's reservation and its own clock plus the drift limit,
--   and a date sequence FAILOVER_GAP values above what the key holds.
-- * Lua numbers are doubles: a Snowflake ID (up to 2^63) is built and returned as decimal text,
--   exact digit for digit; so are date-sequence values of 2^53 and more.

local VERSION = '0.1.0'

-- The module's default layout (Twitter's): 41 bits of ms since the epoch, 5 of datacenter,
-- 5 of worker, 12 of sequence.
local EPOCH_MS = 1288834974657
local TIME_MAX = 2 ^ 41 - 1
local SEQUENCE_MAX = 4095
local NODE_MAX = 31
-- How far ahead of the clock IDs may run (borrowed under bursts or after a step back), as the
-- module's idgen.max-drift-ms; a state key's `max_drift_ms` changes it for its IDs.
local MAX_DRIFT_MS = 1000
local MAX_DRIFT_RANGE_MS = 3600000
-- The reservation written to the state key runs this far ahead of the last ID: one write
-- in this many ms at most, and after a reload at most this long refused.
local RESERVE_MS = 100
local COUNT_MAX = 100000
-- Values each date sequence skips when another process wrote it last (the module's
-- idgen.dateseq-failover-gap).
local FAILOVER_GAP = 10000
local DATESEQ_COUNT_MAX = 1000000000
-- Earlier periods a date sequence's key keeps: a clock stepped back by more repeats values.
local KEPT_PERIODS = 2

-- This server process's run_id, and what it issued: kept between calls (a library's locals
-- live as long as it is loaded), lost at a restart or a reload, which the fences above cover.
local me = nil
local replid = nil
local promotions = 0
local snowflake = {}
local nodes = {}

local function fail(message)
  return redis.error_reply('ERR ' .. message)
end

-- This process's mark: its run_id (another after a restart) and the promotions it went
-- through while the library was loaded, so that a node that was primary, then a replica of
-- another, and is promoted again does not take the other's writes for its own. A promotion
-- gives a node a new replication ID and keeps the one it followed as the second; a primary
-- that makes a backlog for its first replica takes a new ID too, but clears the second.
local function process()
  if not me then
    me = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  end
  local info = redis.call('INFO', 'replication')
  local id = string.match(info, 'master_replid:(%x+)')
  if replid and id ~= replid then
    local second = string.match(info, 'master_replid2:(%x+)') or ''
    if not string.match(second, '^0*$') then
      promotions = promotions + 1
    end
  end
  replid = id
  return me .. ':' .. promotions
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- An integer argument in [low, high], or nil and the error naming it.
local function integer(name, text, low, high)
  local n = tonumber(text)
  if not n or n ~= math.floor(n) or not string.match(text, '^%-?%d+$') then
    return nil, fail(name .. ' ' .. tostring(text) .. ' is not an integer')
  end
  if n < low or n > high then
    return nil, fail(string.format('%s %s must be between %d and %d', name, text, low, high))
  end
  return n
end

-- The options in `args` (each at most once) among `known` (name -> takes a value).
local function options(args, known)
  local found = {}
  local i = 1
  while i <= #args do
    local name = string.upper(args[i])
    local takes = known[name]
    if takes == nil then
      return nil, fail("syntax error: '" .. args[i] .. "' is not an option here")
    end
    if found[name] ~= nil then
      return nil, fail(name .. ' given more than once')
    end
    if takes then
      if i == #args then
        return nil, fail(name .. ' needs a value')
      end
      found[name] = args[i + 1]
      i = i + 2
    else
      found[name] = true
      i = i + 1
    end
  end
  return found
end

-- x (an exact integer below 2^53) as decimal text.
local function decimal(x)
  return string.format('%.0f', x)
end

-- time * 2^22 + low as exact decimal text: time below 2^41, low below 2^22. The product
-- exceeds 2^53, so it is split at 10^7: (a*10^7 + b) * 2^22 + low.
local function compose(time, low)
  local a = math.floor(time / 1e7)
  local b = time - a * 1e7
  local c = b * 4194304 + low
  local carry = math.floor(c / 1e7)
  local high = a * 4194304 + carry
  local rest = c - carry * 1e7
  if high == 0 then
    return decimal(rest)
  end
  return decimal(high) .. string.format('%07d', rest)
end

-- A node field of the state key: an integer 0 to 31.
local function node_field(key, name, text)
  local n = tonumber(text)
  if not n or n ~= math.floor(n) or n < 0 or n > NODE_MAX then
    local given = text and ("'" .. text .. "'") or 'not set'
    return nil, fail(string.format(
      "%s of '%s' is %s: set it with HSET %s %s <0 to %d> (one pair per server)",
      name, key, given, key, name, NODE_MAX))
  end
  return n
end

-- FCALL snowflake_next 1 <state key> [COUNT n]: one ID (decimal text), or with COUNT an array
-- of n strictly increasing IDs. The state key (a hash) holds this server's `worker` and
-- `datacenter`, which the operator sets (and `epoch`, Unix ms, if not Twitter's, and
-- `max_drift_ms`), and `owner`, `reserved` and `issued_epoch`, which the library writes.
local function snowflake_next(keys, args)
  local key = keys[1]
  if not key then
    return fail('snowflake_next takes its state key: FCALL snowflake_next 1 <key> [COUNT n]')
  end
  local opts, err = options(args, { COUNT = true })
  if not opts then return err end
  local count = 1
  if opts.COUNT then
    count, err = integer('COUNT', opts.COUNT, 1, COUNT_MAX)
    if not count then return err end
  end
  local h = redis.call('HMGET', key, 'worker', 'datacenter', 'owner', 'reserved', 'epoch',
    'issued_epoch', 'max_drift_ms')
  local worker, datacenter
  worker, err = node_field(key, 'worker', h[1])
  if not worker then return err end
  datacenter, err = node_field(key, 'datacenter', h[2])
  if not datacenter then return err end
  local epoch = EPOCH_MS
  if h[5] then
    epoch, err = integer("epoch of '" .. key .. "'", h[5], -2 ^ 45, 2 ^ 45)
    if not epoch then return err end
  end
  local drift = MAX_DRIFT_MS
  if h[7] then
    drift, err = integer("max_drift_ms of '" .. key .. "'", h[7], 0, MAX_DRIFT_RANGE_MS)
    if not drift then return err end
  end
  if h[6] and tonumber(h[6]) ~= epoch then
    -- Under another epoch the same time field is another time: new IDs could equal old ones.
    return fail(string.format(
      "epoch of '%s' is %s, but its IDs were issued under %s: they could repeat; put it back, "
        .. 'or give a new state key a pair no server used', key, decimal(epoch), h[6]))
  end
  local node = datacenter * 32 + worker
  local holder = nodes[node]
  if holder and holder ~= key then
    return fail(string.format(
      "'%s' and '%s' both give datacenter %d worker %d on this server: they would issue the "
        .. "same IDs; give each state key a pair of its own", holder, key, datacenter, worker))
  end
  local now, mark = now_ms(), process()
  local state = snowflake[key]
  if not state or state.node ~= node or h[3] ~= mark then
    -- Another process wrote this key last (a restart, a failover), this one reloaded the
    -- library, or changed its pair: start above all it may have issued. A reload is covered by
    -- the reservation, which runs ahead of every ID written. Another process issued at most
    -- its clock at its last call plus the drift limit, and its last call was a millisecond or
    -- more ago (a restart or a failover takes longer), on a clock this one's agrees with.
    local start = math.max(tonumber(h[4]) or 0, now + drift - 1)
    state = { node = node, last = start, sequence = SEQUENCE_MAX, reserved = start }
    snowflake[key] = state
    -- Marked at once, so a call refused below (ahead of the clock) does not fence again.
    redis.call('HSET', key, 'owner', mark, 'reserved', decimal(start), 'issued_epoch',
      decimal(epoch))
  end
  local last, sequence = state.last, state.sequence
  local low_node = node * 4096
  local ids = {}
  for i = 1, count do
    if now > last then
      last, sequence = now, 0
    elseif sequence < SEQUENCE_MAX then
      sequence = sequence + 1
    else
      last, sequence = last + 1, 0
    end
    if last - now > drift then
      return fail(string.format(
        'clock is %d ms behind the last issued ID (limit %d ms): retry once it catches up',
        last - now, drift))
    end
    local time = last - epoch
    if time < 0 or time > TIME_MAX then
      return fail(string.format(
        'the Snowflake time field holds %s to %s ms after 1970 with the epoch %s: %s is outside',
        decimal(epoch), decimal(epoch + TIME_MAX), decimal(epoch), decimal(last)))
    end
    ids[i] = compose(time, low_node + sequence)
  end
  state.last, state.sequence = last, sequence
  nodes[node] = key
  if last >= state.reserved then
    state.reserved = last + RESERVE_MS
    redis.call('HSET', key, 'reserved', decimal(state.reserved))
  end
  if opts.COUNT then
    return ids
  end
  return ids[1]
end

-- Days since 1970-01-01 as year, month, day (UTC; Howard Hinnant's civil_from_days).
local function civil(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- The period's label (yyyyMMdd, yyyyMM or yyyy) now, in UTC.
local function period_label(period, ms)
  local y, m, d = civil(math.floor(ms / 86400000))
  if period == 'DAY' then return y * 10000 + m * 100 + d end
  if period == 'MONTH' then return y * 100 + m end
  return y
end

-- label * 10^digits + n: a number where exact (below 2^53), else decimal text.
local function dateseq_value(label, digits, n, as_text)
  local value = label * 10 ^ digits + n
  if value < 2 ^ 53 and not as_text then
    return value
  end
  return decimal(label) .. string.format('%0' .. digits .. 'd', n)
end

local DATESEQ_OPTIONS = { COUNT = true, DIGITS = true, PERIOD = true, STRING = false }

-- The options both date-sequence functions take: period, digits, count, as text.
local function dateseq_options(args)
  local opts, err = options(args, DATESEQ_OPTIONS)
  if not opts then return nil, err end
  local digits, count = 6, 1
  if opts.DIGITS then
    digits, err = integer('DIGITS', opts.DIGITS, 1, 10)
    if not digits then return nil, err end
  end
  if opts.COUNT then
    count, err = integer('COUNT', opts.COUNT, 1, DATESEQ_COUNT_MAX)
    if not count then return nil, err end
  end
  local period = string.upper(opts.PERIOD or 'day')
  if period ~= 'DAY' and period ~= 'MONTH' and period ~= 'YEAR' then
    return nil, fail("PERIOD '" .. opts.PERIOD .. "' must be day, month or year")
  end
  return { digits = digits, count = count, period = period, text = opts.STRING ~= nil,
    range = opts.COUNT ~= nil }
end

-- A date-sequence call of function `name`: its key and options, and the period's label and
-- its field in the key now.
local function dateseq_call(name, keys, args)
  local key = keys[1]
  if not key then
    return nil, fail(name .. ' takes its key: FCALL ' .. name .. ' 1 <key> [options]')
  end
  local o, err = dateseq_options(args)
  if not o then return nil, err end
  o.key = key
  o.label = period_label(o.period, now_ms())
  o.field = string.lower(o.period) .. ':' .. o.label
  return o
end

-- FCALL dateseq_next 1 <key> [DIGITS d] [COUNT n] [PERIOD day|month|year] [STRING]:
-- yyyyMMdd * 10^d + seq from this period's counter, a field of the hash <key>; with COUNT the
-- range [first, last].
local function dateseq_next(keys, args)
  local o, err = dateseq_call('dateseq_next', keys, args)
  if not o then return err end
  local key, label, field = o.key, o.label, o.field
  local h = redis.call('HMGET', key, field, 'owner')
  local held = tonumber(h[1]) or 0
  if h[1] and (not tonumber(h[1]) or held < 0 or held ~= math.floor(held)) then
    return fail(string.format("the counter '%s' of '%s' holds '%s', not a count", field, key,
      h[1]))
  end
  local mark = process()
  local gap = ''
  if h[2] ~= mark then
    -- Another process wrote it last: what it gave since its last write that reached this
    -- copy may be lost (a failover, a restart from an older file). Skip past it.
    held = held + FAILOVER_GAP
    gap = string.format(' (a server process skips %d values on its first use of a key)',
      FAILOVER_GAP)
  end
  local first, last = held + 1, held + o.count
  if last >= 10 ^ o.digits then
    return fail(string.format(
      'the sequence for %s is spent: %s would not fit in DIGITS %d%s', decimal(label),
      decimal(last), o.digits, gap))
  end
  redis.call('HSET', key, field, decimal(last), 'owner', mark)
  if not h[1] then
    -- A new period: drop all but the KEPT_PERIODS latest before it, kept so that a clock
    -- stepped back across the period's start finds its counter (as the module keeps a
    -- counter idgen.dateseq-ttl, two days, past its period).
    local earlier = {}
    for _, name in ipairs(redis.call('HKEYS', key)) do
      local p, l = string.match(name, '^(%a+):(%d+)$')
      if p == string.lower(o.period) and tonumber(l) < label then
        table.insert(earlier, tonumber(l))
      end
    end
    table.sort(earlier)
    for i = 1, #earlier - KEPT_PERIODS do
      redis.call('HDEL', key, string.lower(o.period) .. ':' .. decimal(earlier[i]))
    end
  end
  if o.range then
    return { dateseq_value(label, o.digits, first, o.text),
      dateseq_value(label, o.digits, last, o.text) }
  end
  return dateseq_value(label, o.digits, first, o.text)
end

-- FCALL_RO dateseq_current 1 <key> [DIGITS d] [PERIOD p] [STRING]: the last value given this
-- period, or nil.
local function dateseq_current(keys, args)
  local o, err = dateseq_call('dateseq_current', keys, args)
  if not o then return err end
  if o.range then
    return fail("syntax error: 'COUNT' is not an option here")
  end
  local held = redis.call('HGET', o.key, o.field)
  if not held then
    return nil
  end
  return dateseq_value(o.label, o.digits, tonumber(held), o.text)
end

redis.register_function('snowflake_next', snowflake_next)
redis.register_function('dateseq_next', dateseq_next)
redis.register_function{
  function_name = 'dateseq_current',
  callback = dateseq_current,
  flags = { 'no-writes' },
}
redis.register_function{
  function_name = 'idgen_version',
  callback = function() return VERSION end,
  flags = { 'no-writes' },
}
