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
--   and a date sequence a gap (its rate's share of the lag, at least FAILOVER_GAP) above what
--   the key holds. The process's role is read at its first call and again only before it
--   could issue what a promotion it has not seen would repeat (process()).
-- * Lua numbers are doubles: a Snowflake ID (up to 2^63) is built and returned as decimal text,
--   exact digit for digit; so are date-sequence values of 2^53 and more.

-- ==== Constants: the module's own (idgen_core::limits, idgen_core::lease, the layout), tested
-- against them (idgen-functions' lib_tests.rs); and this state's memory between calls.

local VERSION = '0.1.0'

-- Library functions called on every ID, as locals (a global's lookup is a table's), bound at
-- the first call: math and string are not reachable while FUNCTION LOAD runs the source.
local floor, ceil, max, format, call, tonumber_
-- '0' to '9', and '00' to '99', by value (compose()).
local DIGIT, PAIR = {}, {}
local function bind()
  floor, ceil, max, format = math.floor, math.ceil, math.max, string.format
  call, tonumber_ = redis.call, tonumber
  for i = 0, 99 do
    PAIR[i] = format('%02d', i)
    if i < 10 then DIGIT[i] = format('%d', i) end
  end
end

-- The module's default layout (Twitter's): 41 bits of ms since the epoch, 5 of datacenter,
-- 5 of worker, 12 of sequence.
local EPOCH_MS = 1288834974657
local TIME_MAX = 2 ^ 41 - 1
local SEQUENCE_MAX = 4095
local NODE_MAX = 31
-- How far ahead of the clock IDs may run (borrowed under bursts or after a step back), as the
-- module's idgen.max-drift-ms; a state key's `max_drift_ms` changes it for its IDs, within the
-- module's range for that setting.
local MAX_DRIFT_MS = 1000
local MAX_DRIFT_RANGE_MS = 86400000
-- The reservation written to the state key runs this far ahead of the last ID: one write
-- in this many ms at most, and after a reload at most this long refused.
local RESERVE_MS = 100
local COUNT_MAX = 100000
-- What a date sequence skips when another process wrote it last (a restart, a failover, a
-- key that came from another node): its peak rate, in values a second as the key records it,
-- times the longest time a primary's writes may go unreplicated (FAILOVER_LAG_MS: with
-- min-replicas-max-lag 1, Redis stops a cut-off primary within 1 s plus the 2 s it takes to
-- notice, docs/module.md), and never less than FAILOVER_GAP (the module's default
-- idgen.dateseq-failover-gap).
local FAILOVER_GAP = 10000
local FAILOVER_LAG_MS = 3000
-- A process reads its role again before a date sequence passes the value it held at the last
-- reading by more than this; a takeover skips this much more than the rate's lag, so that what
-- a node demoted and promoted again gives before it sees the promotion stays below what the
-- primary between gave (process(), below).
local ROLE_CHUNK = 1000
local DATESEQ_COUNT_MAX = 1000000000
-- Earlier periods a date sequence's key keeps: a clock stepped back by more repeats values.
local KEPT_PERIODS = 2

-- This server process's run_id, and what it issued: kept between calls (a library's locals
-- live as long as it is loaded), lost at a restart or a reload, which the fences above cover.
local me = nil
local replid = nil
local promotions = 0
local replica = false
local snowflake = {}
local nodes = {}
-- Per date-sequence key, the last value this state gave in each period it keeps: a key
-- deleted, flushed, evicted or restored from an older copy while the library is loaded
-- continues above it (the module's witness file, for as long as this state lives).
local given = {}
-- Per date-sequence key, its rate as this state counts it (rate_after()).
local rates = {}

-- Worker-ID leases (the module's protocol, docs/leases.md). No TTL is longer, and no holder
-- records an UNTIL further past the server's clock, than the horizon (the module's
-- idgen.workerid-horizon-ms default).
local HORIZON_MS = 30000
-- No holder was told an UNTIL past this (server ms) by an earlier install of the library
-- with a longer horizon: the installer writes it when it shortens the horizon, and every fence
-- reaches at least to it (the module keeps its old horizon for fences as long).
local EARLIER_UNTIL_MS = 0
local MIN_TTL_MS = 100
local MAX_POOL = 65536
local DEFAULT_POOL = 1024
-- Tokens granted at Unix ms t are at least t * 1000: below 2^53 until 2255.
local TOKENS_PER_MS = 1000
-- Every grant starts above this (set by process()).
local lease_fence = 0
-- Where a fence raised at `from` (ms) stands: a horizon past it, and past every UNTIL an
-- earlier install told.
local function fence_at(from)
  return math.max(from + HORIZON_MS, EARLIER_UNTIL_MS)
end
-- Per namespace, the highest version and token this state saw, and the records it wrote for
-- live leases: lost at a restart, a reload or a promotion, where the fence stands in.
local seen = {}
local granted = {}

local function fail(message)
  return redis.error_reply('ERR ' .. message)
end

-- ==== The process and its role (the module's identity/ and its role events).

-- This process's mark: its run_id (another after a restart) and the promotions it went
-- through while the library was loaded, so that a node that was primary, then a replica of
-- another, and is promoted again does not take the other's writes for its own. A promotion
-- gives a node a new replication ID and keeps the one it followed as the second; a primary
-- that makes a backlog for its first replica takes a new ID too, but clears the second.
-- Also sets the lease fence (see the leases below), which follows the same events; `now` is
-- the call's clock.
--
-- Read at every lease call, but not at every ID: INFO is most of an ID's cost. An ID call
-- reads it at its first call, and again before it would issue what a promotion it has not
-- seen could repeat (ROLE_CHUNK, below); `role_checked_at` is the clock at the last reading,
-- and `bases` the value of each date sequence's counter at its first call since.
local NO_REPLID = '0000000000000000000000000000000000000000'
local mark = nil
local role_checked_at = nil
local bases = {}
local function process(now)
  -- Plain finds and fixed-width cuts (replication IDs are 40 hex digits): patterns scanned over
  -- the section's text cost more than the INFO call.
  local info = redis.call('INFO', 'replication')
  local at = string.find(info, 'master_replid:', 1, true)
  local id = at and string.sub(info, at + 14, at + 53)
  at = string.find(info, 'master_replid2:', 1, true)
  local promoted = at ~= nil and string.sub(info, at + 15, at + 54) ~= NO_REPLID
  if not me then
    local server = redis.call('INFO', 'server')
    me = string.match(server, 'run_id:(%x+)')
    -- Grants start a horizon after this process started, as the module's do after a start
    -- without its witness file; and a horizon from now on a node that went through a
    -- promotion (it has a second replication ID) at a time this state cannot know.
    local uptime = tonumber(string.match(server, 'uptime_in_seconds:(%d+)')) or 0
    lease_fence = fence_at(now - uptime * 1000)
    if promoted then
      lease_fence = fence_at(now)
    end
  elseif id ~= replid and promoted then
    promotions = promotions + 1
    -- Another primary acknowledged grants and renewals this copy may lack.
    lease_fence = math.max(lease_fence, fence_at(now))
    seen, granted, given, rates = {}, {}, {}, {}
  end
  replid = id
  replica = not string.find(info, 'role:master', 1, true)
  mark = me .. ':' .. promotions
  role_checked_at, bases = now, {}
  return mark
end

-- ==== The clock, the eviction policy and arguments (the module's args.rs, eviction.rs).

-- The clock in ms. A number read from text costs a strtod: the second's is kept while it
-- lasts.
local second_text, second_ms = nil, 0
local function now_ms()
  local t = call('TIME')
  if t[1] ~= second_text then
    second_text, second_ms = t[1], tonumber_(t[1]) * 1000
  end
  local us = tonumber_(t[2])
  -- floor(us / 1000) without a call: % is an operator.
  return second_ms + (us - us % 1000) / 1000
end

-- The error for a call whose keys (`what`) the server's maxmemory-policy can evict, or nil:
-- the library's keys never keep an expiry, so only an allkeys-* policy can. Read from INFO
-- memory, which costs more than an ID: a lease call reads it every time, a date sequence at
-- every call while the policy can evict (so that setting it back takes effect at once) and
-- otherwise once POLICY_CHECK_MS passed since the last reading (`policy_checked_at`).
local POLICY_CHECK_MS = 1000
local policy_checked_at = -POLICY_CHECK_MS
local evicting = nil
local function evictable(what, now)
  -- A plain find (a memchr and memcmp in C), then the policy's name: a pattern scanned over
  -- the section's text cost as much again as the INFO call itself.
  local info = redis.call('INFO', 'memory')
  local at = string.find(info, 'maxmemory_policy:allkeys', 1, true)
  evicting = at and string.match(info, '^[%w-]+', at + 17)
  policy_checked_at = now
  if evicting then
    return fail(string.format('maxmemory-policy is %s, which can evict %s; set maxmemory-policy '
      .. 'noeviction (or a volatile-* policy)', evicting, what))
  end
end

-- A value as the module quotes it in a message: in single quotes, escaped, cut at 64 bytes.
local ESCAPES = { ['\t'] = '\\t', ['\r'] = '\\r', ['\n'] = '\\n', ['\\'] = '\\\\',
  ["'"] = "\\'", ['"'] = '\\"' }
local function shown(text)
  local escaped = string.gsub(string.sub(text, 1, 64), '.', function(c)
    local byte = string.byte(c)
    return ESCAPES[c] or (byte >= 32 and byte < 127 and c) or string.format('\\x%02x', byte)
  end)
  return "'" .. escaped .. (#text > 64 and '...' or '') .. "'"
end

-- A signed 64-bit integer as Redis reads one (no '+', no spaces), as a number (exact below
-- 2^53) and as canonical text; nil if it is not one.
local function parse_integer(text)
  local sign, digits = string.match(text, '^(%-?)0*(%d+)$')
  if not digits then
    return nil
  end
  local most = sign == '-' and '9223372036854775808' or '9223372036854775807'
  if #digits > 19 or (#digits == 19 and digits > most) then
    return nil
  end
  if digits == '0' then sign = '' end
  return tonumber(sign .. digits), sign .. digits
end

-- A range's end as the module writes it: i64's ends exact.
local function bound(x)
  if x >= 2 ^ 63 - 1 then return '9223372036854775807' end
  if x <= -2 ^ 63 then return '-9223372036854775808' end
  return string.format('%.0f', x)
end

-- An integer argument named `name` in [low, high] and its text as the module shows it (exact
-- past 2^53); or nil and the error, in the module's words.
local function integer(name, text, low, high)
  local n, canonical = parse_integer(text)
  if not n then
    return nil, fail('value is not an integer or out of range: ' .. shown(text))
  end
  if n < low or n > high then
    return nil, fail(string.format('%s %s must be between %s and %s', name, canonical,
      bound(low), bound(high)))
  end
  return n, canonical
end

-- The options in `args` from `first` on (each at most once) among `known` (name -> takes a
-- value), errors in the module's words.
local function options(args, known, first)
  local found = {}
  local i = first or 1
  while i <= #args do
    local name = string.upper(args[i])
    local takes = known[name]
    local syntax = 'syntax error: ' .. shown(args[i])
    if found[name] ~= nil then
      return nil, fail(syntax .. ' is given more than once')
    end
    if takes == nil then
      return nil, fail(syntax .. ' is not an option of this command')
    end
    if takes then
      if i == #args then
        return nil, fail(syntax .. ' needs a value')
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

-- ==== Values and keys' fields (the module's digits.rs and its state's fields).

-- x (an exact integer below 2^53) as decimal text ('%d' formats a C long: cheaper than a
-- double's '%.0f').
local function decimal(x)
  return string.format('%d', x)
end

-- time * 2^22 + low as exact decimal text: time below 2^41, low below 2^22. The product
-- exceeds 2^53, so it is split at 10^7: (a*10^7 + b) * 2^22 + low.
--
-- The low seven digits come from tables of digit texts (bind() fills them) and the high ones,
-- which change every few ms, are formatted once while they last: a sprintf costs more than
-- the rest of an ID's arithmetic.
local high_n, high_text = nil, nil
local function compose(time, low)
  local b = time % 1e7
  local c = b * 4194304 + low
  local rest = c % 1e7
  local high = (time - b) / 1e7 * 4194304 + (c - rest) / 1e7
  if high == 0 then
    return format('%d', c)
  end
  if high ~= high_n then
    high_n, high_text = high, format('%d', high)
  end
  local d = rest % 100
  rest = (rest - d) / 100
  local cc = rest % 100
  rest = (rest - cc) / 100
  local bb = rest % 100
  return high_text .. DIGIT[(rest - bb) / 100] .. PAIR[bb] .. PAIR[cc] .. PAIR[d]
end

-- Every number the library reads from a key goes through here: canonical decimal digits (a
-- '-' only where `low` is negative; no '+', spaces, leading zeros, fraction or exponent), at
-- most 16 of them, in [low, high] (within 2^53, where doubles are exact). nil otherwise.
local function stored(text, low, high)
  if not text or #text > 17 then return nil end
  local sign, digits = string.match(text, '^(%-?)(%d+)$')
  if not digits or #digits > 16 or (#digits > 1 and string.byte(digits) == 48)
      or (sign == '-' and (low >= 0 or digits == '0')) then
    return nil
  end
  local n = tonumber(text)
  if n < low or n > high then return nil end
  return n
end

-- The field `name` of `key` as a number in [low, high]; or nil and the error that names the
-- key and the field, quotes what it holds (cut at 64 bytes) and says how to fix it (`fix`, a
-- text, or a function of the key and field that makes it: built only for the error).
local function field(key, name, text, low, high, fix)
  local n = stored(text, low, high)
  if n then return n end
  local what = text and ('holds ' .. shown(text) .. ', not an integer from ' .. decimal(low)
    .. ' to ' .. decimal(high)) or 'is not set'
  if type(fix) == 'function' then fix = fix(key, name) end
  return nil, fail(name .. ' of ' .. shown(key) .. ' ' .. what .. ': ' .. fix)
end

-- The error for a call of function `name` with other than `low` to `high` keys and `low_args`
-- to `high_args` arguments, or nil.
local function arity(name, keys, args, low_args, high_args, low, high)
  low, high = low or 1, high or 1
  if #keys < low or #keys > high or #args < low_args or #args > high_args then
    return fail("wrong number of arguments for '" .. name .. "' function")
  end
end

-- The state key's fix for its pair's field `name`.
local function pair_fix(key, name)
  -- The key as typed where it can be (printable, no spaces), quoted otherwise.
  local typed = (#key <= 64 and string.match(key, '^[%w%p]+$')) and key or shown(key)
  return string.format('set it with HSET %s %s <0 to %d> (one pair per server)', typed, name,
    NODE_MAX)
end

-- What each state key's operator fields (worker, datacenter, epoch, max_drift_ms) held at its
-- last call, as read and as numbers: a call that reads the same texts (Lua interns strings: a
-- comparison is a pointer's) skips their checks.
local read_fields = {}

-- The library's own fields of a state key, reserved and issued_epoch, read and checked against
-- `epoch` (and `owner`, the mark): the reservation (or nil), or nil and the error. Read when a
-- process takes a key over and when its operator fields change, not at every call: the library
-- writes them, and what it issues depends on them only when it takes a key over.
local function library_fields(key, owner, epoch)
  local h = redis.call('HMGET', key, 'reserved', 'issued_epoch')
  local reserved, issued, err
  if h[1] then
    reserved, err = field(key, 'reserved', h[1], 0, 2 ^ 53 - 1, 'the library writes it; HDEL it '
      .. 'to start above the clock plus the drift limit')
    if not reserved then return nil, err end
  end
  if h[2] then
    issued, err = field(key, 'issued_epoch', h[2], -2 ^ 45, 2 ^ 45, 'the library writes it: put '
      .. 'back the epoch its IDs were issued under')
    if not issued then return nil, err end
  elseif owner then
    -- The library's mark is there, so it issued IDs under the key: under which epoch?
    return nil, fail(format('issued_epoch of %s is not set, but the library issued IDs '
      .. 'under it: put back the epoch they were issued under (HSET %s issued_epoch <Unix ms>), or '
      .. 'give a new state key a pair no server used', shown(key), shown(key)))
  end
  if issued and issued ~= epoch then
    -- Under another epoch the same time field is another time: new IDs could equal old ones.
    return nil, fail(format(
      "epoch of %s is %s, but its IDs were issued under %s: they could repeat; put it back, "
        .. 'or give a new state key a pair no server used', shown(key), decimal(epoch),
      decimal(issued)))
  end
  return reserved or false
end

-- The state key's operator fields `h` (worker, datacenter, owner, epoch, max_drift_ms, as HMGET
-- reads them) as numbers, once the library's own fields agree with them; or nil and the error.
-- The caller compares the texts with read_fields[key] first: this runs when they changed.
local function state_fields(key, h)
  local err, worker, datacenter
  worker, err = field(key, 'worker', h[1], 0, NODE_MAX, pair_fix)
  if not worker then return nil, err end
  datacenter, err = field(key, 'datacenter', h[2], 0, NODE_MAX, pair_fix)
  if not datacenter then return nil, err end
  local epoch = EPOCH_MS
  if h[4] then
    epoch, err = field(key, 'epoch', h[4], -2 ^ 45, 2 ^ 45,
      "Unix ms, or HDEL it for Twitter's epoch")
    if not epoch then return nil, err end
  end
  local drift = MAX_DRIFT_MS
  if h[5] then
    drift, err = field(key, 'max_drift_ms', h[5], 0, MAX_DRIFT_RANGE_MS,
      'HDEL it for the default 1000')
    if not drift then return nil, err end
  end
  local reserved
  reserved, err = library_fields(key, h[3], epoch)
  if reserved == nil then return nil, err end
  local f = { worker = worker, datacenter = datacenter, epoch = epoch, drift = drift,
    node = datacenter * 32 + worker }
  read_fields[key] = { h[1], h[2], nil, h[4], h[5], fields = f }
  return f
end

-- ==== Reply forms: Sqids (the module's cmd/form.rs, idgen_core's sqid.rs).

-- Sqids (SQIDS replies), as the module makes them with its idgen.sqids-alphabet and
-- idgen.sqids-min-length: the alphabet as the Sqids encoder shuffles it, the minimum length,
-- the blocked words that alphabet can spell (lowercase letters and digits, one string), and
-- the first four letters of those of four or more, each followed by '|', all from the Sqids
-- crate the module uses. Strings, not tables: a table of hundreds of words would be
-- walked by the collector in every call of every function, Sqids or not. The installer
-- writes them in (idgen_functions::Settings, the module's defaults unless given); this
-- file as it stands has none, and refuses SQIDS.
-- BEGIN SQIDS
local SQIDS_ALPHABET = nil
local SQIDS_MIN_LENGTH = 0
local SQIDS_BLOCKED = ''
local SQIDS_STARTS = ''
-- END SQIDS

-- The alphabet's letters and codes from 0: made at the first Sqid.
local sqid_letter, sqid_code = nil, {}
local function sqid_tables()
  sqid_letter = {}
  for i = 1, #SQIDS_ALPHABET do
    sqid_letter[i - 1] = string.sub(SQIDS_ALPHABET, i, i)
    sqid_code[i - 1] = string.byte(SQIDS_ALPHABET, i)
  end
end

-- Whether the Sqids blocklist refuses `id`: a word equal to it (the only match for either of
-- 3 characters or fewer), a word with a digit at its start or end, any other word anywhere.
-- The words are read one by one only where four letters of the id start one.
local function sqid_is_blocked(id)
  local low = string.lower(id)
  local n = #low
  for i = 1, n - 3 do
    -- Each entry ends with '|', so `piece|` is found only where an entry is `piece`.
    if string.find(SQIDS_STARTS, string.sub(low, i, i + 3) .. '|', 1, true) then
      for word in string.gmatch(SQIDS_BLOCKED, '%w+') do
        local len = #word
        if len >= 4 and string.sub(low, i, i + len - 1) == word
            and (not string.find(word, '%d') or i == 1 or i + len - 1 == n) then
          return true
        end
      end
    end
  end
  if n <= 3 then
    for word in string.gmatch(SQIDS_BLOCKED, '%w+') do
      if word == low then return true end
    end
  end
  return false
end

local NO_SQIDS = 'SQIDS needs the Sqids alphabet, which the installer writes into the '
  .. 'library: install it with idgen-lease-worker install-library (idgen.install_library in '
  .. 'Python)'

-- The Sqids specification's shuffle of `codes` (letters' codes from index 0), in place.
local function sqid_shuffle(codes, n)
  for i = 0, n - 2 do
    local j = n - 1 - i
    local r = (i * j + codes[i] + codes[j]) % n
    codes[i], codes[r] = codes[r], codes[i]
  end
end

-- The Sqid of the number hi * m + lo (lo below m; m times the alphabet's length below 2^53),
-- as the Sqids specification encodes one number, its digits found two limbs at a time (a
-- double cannot hold a Snowflake ID). nil and why when it cannot.
local function sqid_of(hi, lo, m)
  if not sqid_letter then
    if not SQIDS_ALPHABET then return nil, NO_SQIDS end
    sqid_tables()
  end
  local n = #SQIDS_ALPHABET
  local base = n - 1
  local value_mod_n = ((hi % n) * m + lo) % n
  -- The number's digits in base n - 1, least significant first.
  local digits = {}
  repeat
    local r = hi % base
    hi = (hi - r) / base
    local x = r * m + lo
    r = x % base
    lo = (x - r) / base
    digits[#digits + 1] = r
  until hi == 0 and lo == 0
  -- The encoder tries one more variant than the alphabet has letters.
  for increment = 0, n do
    local offset = ((sqid_code[value_mod_n] + 1) % n + increment) % n
    -- The alphabet from `offset` on, reversed: its first letter pads, the rest are digits.
    local out = { sqid_letter[offset] }
    for k = #digits, 1, -1 do
      out[#out + 1] = sqid_letter[(offset + n - 2 - digits[k]) % n]
    end
    if #out < SQIDS_MIN_LENGTH then
      local work = {}
      for j = 0, n - 1 do work[j] = sqid_code[(offset + n - 1 - j) % n] end
      out[#out + 1] = string.char(work[0])
      while #out < SQIDS_MIN_LENGTH do
        sqid_shuffle(work, n)
        for j = 0, math.min(SQIDS_MIN_LENGTH - #out, n) - 1 do
          out[#out + 1] = string.char(work[j])
        end
      end
    end
    local id = table.concat(out)
    if not sqid_is_blocked(id) then return id end
  end
  return nil, 'every Sqid of these numbers holds a blocked word; try a longer alphabet'
end

-- Most values one call replies as Sqids (the module's bound on a reply of Sqids).
local SQIDS_COUNT_MAX = 1000

-- The error, if any, of SQIDS with STRING (when given) and `count` values.
local function sqids_form(string_given, count)
  if string_given then return fail('STRING and SQIDS cannot be combined') end
  if count > SQIDS_COUNT_MAX then
    return fail(format('COUNT %d must be between 1 and %d with SQIDS', count, SQIDS_COUNT_MAX))
  end
  return nil
end

-- ==== SNOWFLAKE (the module's snowflake/ and cmd/snowflake.rs).

-- FCALL snowflake_next 1 <state key> [COUNT n] [SQIDS]: one ID (decimal text, or its Sqid), or
-- with COUNT an array of n strictly increasing IDs. The state key (a hash) holds this server's
-- `worker` and `datacenter`, which the operator sets (and `epoch`, Unix ms, if not Twitter's,
-- and `max_drift_ms`), and `owner`, `reserved` and `issued_epoch`, which the library writes.
local SNOWFLAKE_OPTIONS = { COUNT = true, SQIDS = false }
local function snowflake_next(keys, args)
  if not format then bind() end
  if #keys ~= 1 then
    return fail(format('snowflake_next takes one key, its state key, and was given %d: '
      .. 'FCALL snowflake_next 1 <key> [COUNT n] [SQIDS]', #keys))
  end
  local key = keys[1]
  local count, counted, sqids, err = 1, false, false, nil
  if #args > 0 then
    local opts
    opts, err = options(args, SNOWFLAKE_OPTIONS)
    if not opts then return err end
    if opts.COUNT then
      count, err = integer('COUNT', opts.COUNT, 1, COUNT_MAX)
      if not count then return err end
      counted = true
    end
    sqids = opts.SQIDS ~= nil
    if sqids then
      err = sqids_form(nil, count)
      if err then return err end
    end
  end
  -- The operator's fields and the mark, at every call (a pair moved to another key or server
  -- takes effect at once); the library's own only when they matter (library_fields()).
  local h = call('HMGET', key, 'worker', 'datacenter', 'owner', 'epoch', 'max_drift_ms')
  local c = read_fields[key]
  local f = c and c[1] == h[1] and c[2] == h[2] and c[4] == h[4] and c[5] == h[5] and c.fields
  if not f then
    f, err = state_fields(key, h)
    if not f then return err end
  end
  local epoch, drift, node = f.epoch, f.drift, f.node
  local holder = nodes[node]
  if holder and holder ~= key then
    return fail(format(
      "%s and %s both give datacenter %d worker %d on this server: they would issue the "
        .. "same IDs; give each state key a pair of its own", shown(holder), shown(key),
      f.datacenter, f.worker))
  end
  local now = now_ms()
  local state = snowflake[key]
  local ticks = count == 1 and 1 or ceil(count / 4096)
  -- This process's role, read again before an ID could reach the clock at the last reading
  -- plus the drift limit: a promotion it has not seen (this node demoted, then promoted again,
  -- with another primary's writes lost on the way) let the other start above its own clock
  -- plus the drift limit, after this process's last call as a primary, so above every ID
  -- issued here before the next reading.
  local ahead = state and state.last > now and state.last or now
  if not role_checked_at or ahead + ticks >= role_checked_at + drift then
    process(now)
  end
  if state and state.node ~= node and nodes[state.node] == key then
    -- The key took another pair: its old one is free for another key (which starts above
    -- the clock plus the drift limit, above every ID this one made under it).
    nodes[state.node] = nil
  end
  if not state or state.node ~= node or h[3] ~= mark then
    -- Another process wrote this key last (a restart, a failover), this one reloaded the
    -- library, or changed its pair, or the key is new: start above all that may have been
    -- issued under the pair. A reload is covered by the reservation, which runs ahead of every
    -- ID written. Another process issued at most its clock at its last call plus the drift
    -- limit, and its last call was a millisecond or more ago (a restart or a failover takes
    -- longer), on a clock this one's agrees with.
    local reserved
    reserved, err = library_fields(key, h[3], epoch)
    if reserved == nil then return err end
    local start = max(reserved or 0, now + drift - 1)
    local own = state and state.node == node and state.last
    if own then
      start = max(start, own)
    end
    -- `fence`: the start when it is what may have been issued, not IDs this state issued:
    -- the clock plus the drift limit, or a reservation at most RESERVE_MS past that (a
    -- reload soon after a fence: its reservation runs ahead of the fence). The clock passes
    -- it soon; past that, or at this state's own IDs, the clock is behind.
    local fenced = start ~= own and start <= now + drift + RESERVE_MS
    state = { node = node, last = start, sequence = SEQUENCE_MAX, reserved = start,
      fence = fenced and start or nil, fenced_at = now }
    snowflake[key] = state
    -- Marked at once, so a call refused below (ahead of the clock) does not fence again.
    redis.call('HSET', key, 'owner', mark, 'reserved', decimal(start), 'issued_epoch',
      decimal(epoch))
  end
  -- The key is the library's from here: an expiry put on it would take the pair and the
  -- reservation with it.
  call('PERSIST', key)
  local last, sequence = state.last, state.sequence
  -- The ticks this call's IDs take, first and last, checked before any is made.
  local first_tick, final
  if now > last then
    first_tick, final = now, now + ticks - 1
  elseif count <= SEQUENCE_MAX - sequence then
    first_tick, final = last, last
  else
    first_tick = sequence < SEQUENCE_MAX and last or last + 1
    final = last + ceil((count - (SEQUENCE_MAX - sequence)) / 4096)
  end
  if final - now > drift then
    local over = final - now - drift
    if ticks > drift + 1 then
      return fail(format('COUNT %d needs %d ms of IDs, more than the drift limit of %d ms '
        .. 'lets run ahead of the clock at once: ask for fewer', count, ticks, drift))
    end
    if state.fence and last <= state.fence + 1 and now <= state.fence
        and now >= state.fenced_at then
      -- Not the clock (it has not gone back since) nor IDs issued ahead of it (none went past
      -- the fence's first tick): the fence, which the clock passes within the drift limit.
      return fail(format('IDs of %s resume above %s, the fence this process set at its '
        .. 'first use of the key (after a start, a failover, a reload of the library, or for a '
        .. 'new key, it cannot know what was issued under datacenter %d worker %d up to the '
        .. 'clock plus the drift limit, %d ms): COUNT %d would run %d ms past that limit; '
        .. 'retry in %d ms, or ask for fewer', shown(key), decimal(state.fence), f.datacenter,
        f.worker, drift, count, over, over))
    end
    return fail(format(
      'clock is %d ms behind the last issued ID (limit %d ms): retry once it catches up',
      max(first_tick, now + drift + 1) - now, drift))
  end
  if first_tick < epoch or final - epoch > TIME_MAX then
    return fail(format(
      'the Snowflake time field holds %s to %s ms after 1970 with the epoch %s: %s is outside',
      decimal(epoch), decimal(epoch + TIME_MAX), decimal(epoch),
      decimal(first_tick < epoch and first_tick or epoch + TIME_MAX + 1)))
  end
  local low_node = node * 4096
  -- An array only for COUNT: one ID is replied as it is.
  local ids = counted and {} or nil
  local id
  for i = 1, count do
    if now > last then
      last, sequence = now, 0
    elseif sequence < SEQUENCE_MAX then
      sequence = sequence + 1
    else
      last, sequence = last + 1, 0
    end
    if sqids then
      id, err = sqid_of(last - epoch, low_node + sequence, 4194304)
      if not id then return fail(err) end
    else
      id = compose(last - epoch, low_node + sequence)
    end
    if ids then ids[i] = id end
  end
  state.last, state.sequence = last, sequence
  nodes[node] = key
  if last >= state.reserved then
    state.reserved = last + RESERVE_MS
    call('HSET', key, 'reserved', decimal(state.reserved))
  end
  return ids or id
end

-- ==== DATESEQ (the module's dateseq/ and cmd/dateseq.rs): the calendar, values, counters.

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

-- The time zone of date sequences' labels: UTC, or the zone the installer wrote in (a
-- function reads no time-zone database): its offset from UTC in ms at 1970, then each change
-- as its Unix ms and the new offset, up to ZONE_END_MS, past which the library refuses.
local ZONE = 'UTC'
local ZONE_FIRST_MS = 0
local ZONE_CHANGES = {}
local ZONE_END_MS = 2 ^ 53

-- The zone's offset at `ms` (nil past ZONE_END_MS), kept with the span it holds for: one
-- comparison a call.
local zone_from, zone_to, zone_offset = 0, -1, 0
local function zone_offset_at(ms)
  if ms >= zone_from and ms < zone_to then return zone_offset end
  if ms >= ZONE_END_MS then return nil end
  local offset, from, to = ZONE_FIRST_MS, -2 ^ 53, ZONE_END_MS
  for i = 1, #ZONE_CHANGES, 2 do
    if ZONE_CHANGES[i] > ms then
      to = ZONE_CHANGES[i]
      break
    end
    from, offset = ZONE_CHANGES[i], ZONE_CHANGES[i + 1]
  end
  zone_from, zone_to, zone_offset = from, to, offset
  return offset
end

-- The period's label (yyyyMMdd, yyyyMM or yyyy) of `ms`, a time in the zone (UTC ms plus the
-- zone's offset).
local function period_label(period, ms)
  local y, m, d = civil(math.floor(ms / 86400000))
  if period == 'DAY' then return y * 10000 + m * 100 + d end
  if period == 'MONTH' then return y * 100 + m end
  return y
end

-- 10^d for every DIGITS d a sequence takes (1 to 10): a table's read, not a pow().
local POWERS_OF_TEN = {}
for d = 1, 10 do POWERS_OF_TEN[d] = 10 ^ d end

-- label * 10^digits + n: a number where exact (below 2^53), else decimal text.
local function dateseq_value(label, digits, n, as_text)
  local value = label * POWERS_OF_TEN[digits] + n
  if value < 2 ^ 53 and not as_text then
    return value
  end
  return decimal(label) .. string.format('%0' .. digits .. 'd', n)
end

-- The values first..last of the period `label` as Sqids: all of them for a COUNT (the module
-- replies every value as a Sqid, not a range), else the one.
local function dateseq_sqids(label, o, first, last)
  local sqids = {}
  for n = first, last do
    local sqid, err = sqid_of(label, n, POWERS_OF_TEN[o.digits])
    if not sqid then return fail(err) end
    sqids[#sqids + 1] = sqid
  end
  return o.range and sqids or sqids[1]
end

local DATESEQ_OPTIONS = { COUNT = true, DIGITS = true, PERIOD = true, STRING = false,
  SQIDS = false }
local DATESEQ_CURRENT_OPTIONS = { DIGITS = true, PERIOD = true, STRING = false, SQIDS = false }

-- The options of a date-sequence function (COUNT only where `counted`): period, digits,
-- count, as text; checked in the module's order.
local DATESEQ_DEFAULTS = { digits = 6, count = 1, period = 'DAY', text = false, range = false }
local function dateseq_options(args, counted)
  if #args == 0 then
    return DATESEQ_DEFAULTS
  end
  local opts, err = options(args, counted and DATESEQ_OPTIONS or DATESEQ_CURRENT_OPTIONS)
  if not opts then return nil, err end
  local digits, count = 6, 1
  local digits_text = '6'
  if opts.DIGITS then
    digits, digits_text = integer('DIGITS', opts.DIGITS, -2 ^ 63, 2 ^ 63)
    if not digits then return nil, digits_text end
  end
  if opts.COUNT then
    count, err = integer('COUNT', opts.COUNT, 1, DATESEQ_COUNT_MAX)
    if not count then return nil, err end
  end
  local period = string.upper(opts.PERIOD or 'day')
  if period ~= 'DAY' and period ~= 'MONTH' and period ~= 'YEAR' then
    return nil, fail('PERIOD ' .. shown(opts.PERIOD) .. ' must be day, month or year')
  end
  if digits < 1 or digits > 10 then
    return nil, fail('DIGITS must be between 1 and 10, got ' .. digits_text)
  end
  local sqids = opts.SQIDS ~= nil
  if sqids then
    err = sqids_form(opts.STRING, count)
    if err then return nil, err end
  end
  return { digits = digits, count = count, period = period, text = opts.STRING ~= nil,
    range = opts.COUNT ~= nil, sqids = sqids }
end

-- A date-sequence call of function `name`: its options (a table shared by calls without
-- any: read, never written), the period's label and field now (`day`: a table kept per period
-- and day), and the clock; or nil and the error. The witness key, if given, is a second hash
-- (in the key's slot, e.g. `{order}` and `{order}:witness`) that mirrors the sequence's: what a
-- DEL, a lowered counter or an older copy takes from one, the other keeps, and replication
-- carries both to every replica.
local fields_by_day = {}
local function dateseq_call(name, keys, args)
  if #keys ~= 1 and #keys ~= 2 then
    return nil, fail(format("%s takes the sequence's key and, if it has one, its "
      .. 'witness key; it was given %d keys: FCALL %s 1 <key> [options], or FCALL %s 2 <key> '
      .. '<witness key> [options]', name, #keys, name, name))
  end
  if keys[2] == keys[1] then
    return nil, fail('the witness key ' .. shown(keys[1]) .. " is the sequence's own key: name "
      .. 'another key in its slot, e.g. {order} and {order}:witness')
  end
  local o = DATESEQ_DEFAULTS
  if #args > 0 then
    local err
    o, err = dateseq_options(args, name == 'dateseq_next')
    if not o then return nil, err end
  end
  local now = now_ms()
  local offset = zone_offset_at(now)
  if not offset then
    local y, m, d = civil(floor(ZONE_END_MS / 86400000))
    return nil, fail(format('the time zone %s is written into this library until '
      .. '%04d-%02d-%02d only: install the library again (idgen-lease-worker install-library '
      .. '--time-zone %s)', ZONE, y, m, d, ZONE))
  end
  -- The period's label and field name, made once a day in the zone (and again after a clock
  -- step).
  local here = now + offset
  local day = (here - here % 86400000) / 86400000
  local names = fields_by_day[o.period]
  if not names or names.day ~= day then
    local label = period_label(o.period, here)
    local period = string.lower(o.period)
    names = { day = day, label = label, name = period, field = period .. ':' .. label }
    fields_by_day[o.period] = names
  end
  return o, names, now
end

-- The counter `name` of `key` as it holds it (nil for none), or nil and the error naming what
-- it holds that the library never writes.
local count_text, count_n = nil, nil
local function counter(key, name, raw)
  if not raw then return nil end
  -- The text this state wrote last reads as what it wrote (strings are interned: one compare).
  if raw == count_text then return count_n end
  local n = stored(raw, 0, 2 ^ 53 - 1)
  if not n then
    return nil, fail(string.format("the counter '%s' of %s holds %s, not a count", name,
      shown(key), shown(raw)))
  end
  return n
end

-- A sequence's rate as its key records it: a second, and bounds on the values given in that
-- second and in the one before (never below them: a takeover's gap is sized by them); or nil
-- and the error.
local function rate_of(key, raw)
  if not raw then return { 0, 0, 0 } end
  local s, n, p = string.match(raw, '^(%d+) (%d+) (%d+)$')
  local r = s and { stored(s, 0, 2 ^ 53 - 1), stored(n, 0, 2 ^ 53 - 1),
    stored(p, 0, 2 ^ 53 - 1) }
  if not (r and r[1] and r[2] and r[3]) then
    return nil, fail(format("rate of %s holds %s, not '<second> <values> <values>' as the "
      .. 'library writes it: HDEL it (a takeover then skips %d values)', shown(key), shown(raw),
      FAILOVER_GAP))
  end
  return r
end

-- What a takeover skips: the peak rate the key recorded (values a second) times the lag the
-- docs assume, plus what the process before may have given past it without reading its role
-- (ROLE_CHUNK), and never less than FAILOVER_GAP.
local function gap_of(rate)
  return max(FAILOVER_GAP, ceil(max(rate[2], rate[3]) * FAILOVER_LAG_MS / 1000) + ROLE_CHUNK)
end

-- Counts `count` more values at `now` into `rate` (this state's, as rate_of() reads it, with
-- `written`, the bound on this second's values its key holds); the text to write to the key
-- when its bound no longer holds (a new second, or more values than it says) or `force`, else
-- nil. The bound written is twice the values given: a second at any rate takes a few writes
-- of it, and a takeover skips at most twice what it must.
local function rate_after(rate, now, count, force)
  local second = (now - now % 1000) / 1000
  if second > rate[1] then
    rate[3] = second == rate[1] + 1 and rate[2] or 0
    rate[1], rate[2], rate.written = second, count, nil
  else
    -- This second, or a clock stepped back: the same window.
    rate[2] = rate[2] + count
  end
  if not force and rate.written and rate[2] <= rate.written then return nil end
  rate.written = 2 * rate[2]
  return format('%d %d %d', rate[1], rate.written, rate[3])
end

-- Drops all but the KEPT_PERIODS latest counters of `period` before `label` from `key`: kept
-- so that a clock stepped back across the period's start finds its counter (as the module
-- keeps a counter idgen.dateseq-ttl, two days, past its period).
local function prune(key, period, label)
  local earlier = {}
  for _, name in ipairs(redis.call('HKEYS', key)) do
    local p, l = string.match(name, '^(%a+):(%d+)$')
    if p == period and tonumber(l) < label then
      table.insert(earlier, tonumber(l))
    end
  end
  table.sort(earlier)
  for i = 1, #earlier - KEPT_PERIODS do
    redis.call('HDEL', key, period .. ':' .. decimal(earlier[i]))
  end
end

-- FCALL dateseq_next 1 <key> [DIGITS d] [COUNT n] [PERIOD day|month|year] [STRING] (or 2 <key>
-- <witness key> ...): yyyyMMdd * 10^d + seq from this period's counter, a field of the hash
-- <key> (and of its witness); with COUNT the range [first, last].
local EVICTED_SEQUENCES = 'date sequences: one evicted and found missing after a restart '
  .. 'starts again at the gap and repeats its values'
local NOTHING = {}
local function dateseq_next(keys, args)
  if not format then bind() end
  local o, names, now = dateseq_call('dateseq_next', keys, args)
  if not o then return names end
  local key, witness, label, field = keys[1], keys[2], names.label, names.field
  -- The policy read again at every call while it can evict, else once a second (evictable()).
  local err
  if evicting or now >= policy_checked_at + POLICY_CHECK_MS or now < policy_checked_at then
    err = evictable(EVICTED_SEQUENCES, now)
    if err then return err end
  end
  local h = call('HMGET', key, field, 'owner')
  local w = witness and call('HMGET', witness, field, 'owner') or NOTHING
  -- The counter as this state wrote it last reads as what it wrote (counter()).
  local held, kept = count_n, nil
  if h[1] ~= count_text then
    held, err = counter(key, field, h[1])
    if err then return err end
  end
  if witness then
    kept, err = counter(witness, field, w[1])
    if err then return err end
  end
  -- The copy that went furthest speaks for the sequence (the key's when neither holds this
  -- period, unless the key is gone).
  local owner, rate_key = h[2], key
  if (kept or -1) > (held or -1) or (not h[1] and not h[2] and witness) then
    owner, rate_key = w[2], witness
  end
  local n = held or 0
  if kept and kept > n then n = kept end
  if not role_checked_at then process(now) end
  local mine = given[key]
  local witnessed = mine and mine[field]
  -- Another process wrote it last: what it gave since its last write that reached this copy
  -- may be lost (a failover, a restart from an older file). Skip past it. (A key that
  -- vanished under this process continues above what this process gave.)
  local takeover = owner ~= mark and not (not owner and witnessed)
  local rate = rates[key]
  if takeover or not rate then
    -- The rate as the copy that speaks records it: a takeover's gap follows it, and this
    -- state counts on from it.
    rate, err = rate_of(rate_key, redis.call('HGET', rate_key, 'rate'))
    if not rate then return err end
    rates[key] = rate
  end
  local gap = 0
  if takeover then
    gap = gap_of(rate)
    n = n + gap
  end
  if witnessed and witnessed > n then
    n = witnessed
  end
  local first, last = n + 1, n + o.count
  -- The role read again before this process gives more than ROLE_CHUNK past where it stood at
  -- the last reading (what this call gives counts as given at a reading it makes): a promotion
  -- found there answers the call afresh, under the new mark.
  local since = bases[key]
  if not since then
    since = {}
    bases[key] = since
  end
  local base = since[field]
  if not base then
    base = n
    since[field] = n
  end
  if last > base + ROLE_CHUNK then
    local before = mark
    process(now)
    if mark ~= before then return dateseq_next(keys, args) end
    bases[key] = { [field] = last }
  end
  if last >= POWERS_OF_TEN[o.digits] then
    -- The module's words for each case: spent after the gap, a COUNT that does not fit, spent.
    local spent = string.format('the sequence for %s is spent: it no longer fits in %d digits',
      decimal(label), o.digits)
    if gap > 0 then
      return fail(string.format('%s (a server process skips %d values on its first use of a '
        .. 'key: its peak rate times %d ms plus %d, at least %d): use more DIGITS', spent, gap,
        FAILOVER_LAG_MS, ROLE_CHUNK, FAILOVER_GAP))
    end
    if n + 1 < 10 ^ o.digits then
      return fail(string.format('COUNT %d does not fit: %s values are left for %s in %d DIGITS',
        o.count, decimal(10 ^ o.digits - 1 - n), decimal(label), o.digits))
    end
    return fail(spent)
  end
  -- Written in one HSET to each copy: this period's counter, the mark, the rate, and after a
  -- takeover the key's other periods past the gap too (the old process may have given values
  -- of each of them past its last write that reached this copy).
  -- The mark and the rate written with the counter where a copy lacks the mark (and so may
  -- lack the rate), else the rate only when its bound no longer holds (rate_after()).
  local last_text = format('%d', last)
  local rate_now = rate_after(rate, now, o.count, h[2] ~= mark or (witness and w[2] ~= mark))
  count_text, count_n = last_text, last
  if gap == 0 then
    if rate_now then
      call('HSET', key, field, last_text, 'owner', mark, 'rate', rate_now)
      if witness then
        call('HSET', witness, field, last_text, 'owner', mark, 'rate', rate_now)
      end
    else
      call('HSET', key, field, last_text)
      if witness then call('HSET', witness, field, last_text) end
    end
  end
  local write = gap > 0 and { key, field, last_text, 'owner', mark, 'rate', rate_now }
  if gap > 0 then
    local others = {}
    for _, k in ipairs({ key, witness }) do
      local all = redis.call('HGETALL', k)
      for i = 1, #all, 2 do
        local name, c = all[i], stored(all[i + 1], 0, 2 ^ 53 - 1)
        if name ~= field and c and string.match(name, '^%a+:%d+$') and c > (others[name] or -1)
        then
          others[name] = c
        end
      end
    end
    for name, c in pairs(others) do
      table.insert(write, name)
      table.insert(write, decimal(c + gap))
    end
  end
  if write then
    redis.call('HSET', unpack(write))
    if witness then redis.call('HSET', witness, unpack(write, 2)) end
  end
  call('PERSIST', key)
  if witness then call('PERSIST', witness) end
  if not mine then
    mine = {}
    given[key] = mine
  end
  local period = names.name
  if not witnessed then
    -- A period new to this state: keep the KEPT_PERIODS latest before it.
    local labels = {}
    for name in pairs(mine) do
      if string.sub(name, 1, #period + 1) == period .. ':' then table.insert(labels, name) end
    end
    table.sort(labels)
    for i = 1, #labels - KEPT_PERIODS do mine[labels[i]] = nil end
  end
  mine[field] = last
  if not h[1] then prune(key, period, label) end
  if witness and not w[1] then prune(witness, period, label) end
  if o.sqids then return dateseq_sqids(label, o, first, last) end
  if o.range then
    return { dateseq_value(label, o.digits, first, o.text),
      dateseq_value(label, o.digits, last, o.text) }
  end
  return dateseq_value(label, o.digits, first, o.text)
end

-- FCALL_RO dateseq_current 1 <key> [DIGITS d] [PERIOD p] [STRING] (or 2 <key> <witness key>
-- ...): the last value given this period, or nil.
local function dateseq_current(keys, args)
  if not format then bind() end
  local o, names = dateseq_call('dateseq_current', keys, args)
  if not o then return names end
  local key, witness, field = keys[1], keys[2], names.field
  local held, kept, err
  held, err = counter(key, field, redis.call('HGET', key, field))
  if err then return err end
  if witness then
    kept, err = counter(witness, field, redis.call('HGET', witness, field))
    if err then return err end
  end
  local witnessed = given[key] and given[key][field]
  local n = math.max(held or -1, kept or -1, witnessed or -1)
  if n < 0 then
    return nil
  end
  if o.sqids then return dateseq_sqids(names.label, o, n, n) end
  return dateseq_value(names.label, o.digits, n, o.text)
end

-- ==== WORKERID leases (the module's leases/ and cmd/workerid.rs).

-- Worker-ID leases: WORKERID.ACQUIRE, RENEW, RELEASE and LIST of the module, on its namespace
-- format (a hash: max, token, version, void_below, grant_above, and per worker ID
-- "<token> <expires_ms> <until_ms> <floor_ms>"), which the library marks with `owner`, the
-- process that wrote it last. In place of the module's witness file: grants start above the
-- lease fence (a horizon past this process's start, or past a promotion), and a namespace
-- that another process wrote last is fenced at its first write here.

local AGAIN = 'stop issuing and ACQUIRE again'

local function foreign(why)
  return fail('the namespace holds data idgen did not write (' .. why .. '): refusing to use '
    .. 'or overwrite it; DEL it only if no process holds a lease from it')
end

-- As Rust's {:?} shows a string.
local function quoted(text)
  return '"' .. string.gsub(text, '[\\"]', '\\%0') .. '"'
end

-- A count the library wrote: digits, exact in a double.
local function count_of(text)
  return stored(text, 0, 2 ^ 53 - 1)
end

local function record_text(l)
  return decimal(l.token) .. ' ' .. decimal(l.expires) .. ' ' .. decimal(l.until_ms) .. ' '
    .. decimal(l.floor)
end

local POOL_COUNTS = { max = 'max', token = 'token', version = 'version',
  void_below = 'void_below', grant_above = 'grant_above' }

-- The namespace's pool as its hash holds it, or nil and the error.
local function read_pool(ns)
  local flat = redis.pcall('HGETALL', ns)
  if flat.err then
    return nil, flat
  end
  local pool = { max = 0, token = 0, version = 0, void_below = 0, grant_above = 0, leases = {} }
  local has_max = false
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    local bad = 'field ' .. quoted(field) .. ' = ' .. quoted(value)
    if field == 'owner' then
      pool.owner = value
    elseif POOL_COUNTS[field] then
      local n = count_of(value)
      if not n then return nil, foreign(bad) end
      pool[POOL_COUNTS[field]] = n
      has_max = has_max or field == 'max'
    else
      local id = count_of(field)
      local t, e, u, f = string.match(value, '^(%d+) (%d+) (%d+) (%d+)$')
      local l = t and { token = count_of(t), expires = count_of(e), until_ms = count_of(u),
        floor = count_of(f) }
      if not id or decimal(id) ~= field or not l or not (l.token and l.expires and l.until_ms
          and l.floor) or l.floor > l.until_ms then
        return nil, foreign(bad)
      end
      pool.leases[id] = l
    end
  end
  if has_max and (pool.max == 0 or pool.max > MAX_POOL) then
    return nil, foreign('field "max" = ' .. quoted(decimal(pool.max)))
  end
  if not has_max and next(pool.leases) then
    return nil, foreign('leases but no "max"')
  end
  local ids = {}
  for id in pairs(pool.leases) do table.insert(ids, id) end
  table.sort(ids)
  for _, id in ipairs(ids) do
    if id >= pool.max or pool.leases[id].token > pool.token then
      return nil, foreign('field ' .. quoted(decimal(id)) .. ' = '
        .. quoted(record_text(pool.leases[id])))
    end
  end
  pool.ids = ids
  return pool
end

-- Writes the pool's counters and `worker`'s record (all of them for nil) with one HSET, and
-- drops any expiry the namespace was given: a namespace that expires would hand its worker
-- IDs out again. Remembers what it wrote.
local function write_pool(ns, pool, mark, worker, now)
  local args = { 'HSET', ns, 'token', decimal(pool.token), 'version', decimal(pool.version),
    'owner', mark }
  for _, name in ipairs({ 'max', 'void_below', 'grant_above' }) do
    if pool[name] ~= 0 then
      table.insert(args, name)
      table.insert(args, decimal(pool[name]))
    end
  end
  local l = worker and pool.leases[worker]
  if l then
    table.insert(args, decimal(worker))
    table.insert(args, record_text(l))
  end
  redis.call(unpack(args))
  redis.call('PERSIST', ns)
  local known = seen[ns] or { version = 0, token = 0 }
  seen[ns] = { version = math.max(known.version, pool.version),
    token = math.max(known.token, pool.token) }
  if l then
    local mine = granted[ns] or {}
    mine[worker] = l.expires > now and record_text(l) or nil
    for id, text in pairs(mine) do
      if tonumber(string.match(text, '^%d+ (%d+)')) <= now then mine[id] = nil end
    end
    granted[ns] = next(mine) and mine or nil
  end
end

-- The namespace `ns` opened for a lease call: refused on a replica or under eviction, reset
-- if it went back since this state saw it, fenced if another process wrote it last.
-- Returns the pool, the clock and this process's mark, or nil and the error.
local function open_pool(ns, writable)
  if not format then bind() end
  local now = now_ms()
  local mark = process(now)
  if replica then
    return nil, fail('WORKERID commands are refused on a replica: send them to the primary')
  end
  local err = evictable('lease namespaces: an evicted namespace grants live holders\' worker IDs '
    .. 'again', now)
  if err then return nil, err end
  local pool, err = read_pool(ns)
  if not pool then return nil, err end
  local known = seen[ns]
  local has_data = pool.version ~= 0 or pool.token ~= 0
  -- Written last by another process (before a restart, a failover, or on another node): its
  -- records may lack renewals that reached only a lost copy. Fenced at its first write; a
  -- read leaves it unknown.
  local unknown = not known and has_data and pool.owner ~= mark
  if unknown and not writable then
    return pool, now, mark
  end
  if known and (pool.version < known.version or pool.token < known.token) then
    -- Deleted, expired, evicted, flushed or restored from an older copy since this state
    -- last saw it: every lease granted before is void, grants start a horizon from now.
    granted[ns] = nil
    if writable then
      pool.token = math.max(pool.token, known.token)
      pool.version = math.max(pool.version, known.version) + 1
      pool.void_below = pool.token + 1
      pool.grant_above = math.max(pool.grant_above, fence_at(now))
      write_pool(ns, pool, mark, nil, now)
      redis.log(redis.LOG_WARNING, 'idgen: namespace ' .. ns .. ' went back (deleted, '
        .. 'expired, evicted, flushed or restored from an older copy): its earlier leases are '
        .. 'void and grants start above ' .. decimal(pool.grant_above))
    end
  elseif unknown then
    pool.version = pool.version + 1
    pool.grant_above = math.max(pool.grant_above, fence_at(now))
    write_pool(ns, pool, mark, nil, now)
  else
    local mine = granted[ns] or {}
    for id, wrote in pairs(mine) do
      local l = pool.leases[id]
      local found = l and record_text(l)
      if found ~= wrote and tonumber(string.match(wrote, '^%d+ (%d+)')) > now then
        return nil, foreign('field "' .. decimal(id) .. '" holds '
          .. (found and quoted(found) or 'nothing') .. ', but the live lease this coordinator '
          .. 'wrote there is ' .. quoted(wrote) .. ': the record was changed by hand; put it '
          .. 'back, or DEL the namespace to void every lease in it')
      end
    end
    if has_data then
      seen[ns] = { version = math.max(pool.version, known and known.version or 0),
        token = math.max(pool.token, known and known.token or 0) }
    end
  end
  return pool, now, mark
end

local function check_ttl(ttl, text)
  if ttl < MIN_TTL_MS or ttl > HORIZON_MS then
    return fail(string.format('TTL %s must be between %d and %d ms (idgen.workerid-horizon-ms)',
      text, MIN_TTL_MS, HORIZON_MS))
  end
end

-- The live holder of `worker` under `token` (`h`: both and their texts), or nil and the error.
local function holder(pool, h, now)
  local worker, token = h.worker, h.token
  local void = token < pool.void_below
  if worker < 0 or worker >= pool.max then
    if void then
      -- As the module shows it: within a u32.
      local shown_id = worker < 0 and '0' or (worker > 4294967295 and '4294967295' or h.worker_text)
      return nil, fail(string.format('lease of worker ID %s is void: the namespace was reset '
        .. '(deleted, expired, evicted, flushed or restored from an older copy) after it was '
        .. 'granted; %s', shown_id, AGAIN))
    elseif pool.max == 0 then
      return nil, fail('the namespace holds no leases: it was deleted, expired, evicted or '
        .. 'flushed (or never made): ' .. AGAIN)
    end
    return nil, fail(string.format('worker ID %s is not in this namespace: it must be between '
      .. '0 and %d', h.worker_text, pool.max - 1))
  end
  if void then
    return nil, fail(string.format('lease of worker ID %d is void: the namespace was reset '
      .. '(deleted, expired, evicted, flushed or restored from an older copy) after it was '
      .. 'granted; %s', worker, AGAIN))
  end
  local l = pool.leases[worker]
  if l and l.token == token and l.expires > now then
    return l
  end
  if l and l.token == token then
    return nil, fail(string.format('lease of worker ID %d under token %s has expired: %s',
      worker, h.token_text, AGAIN))
  end
  return nil, fail(string.format("token %s is not the holder's of worker ID %d: %s",
    h.token_text, worker, AGAIN))
end

-- The `worker_id token` arguments: both, and their texts; or nil and the error.
local function holder_args(args)
  local worker, worker_text = integer('worker_id', args[1], -2 ^ 63, 2 ^ 63)
  if not worker then return nil, worker_text end
  local token, token_text = integer('token', args[2], 0, 2 ^ 63 - 1)
  if not token then return nil, token_text end
  return { worker = worker, token = token, worker_text = worker_text, token_text = token_text }
end

-- FCALL workerid_acquire 1 <ns> TTL ms [MAX n]: [worker_id, token, expires_at_ms,
-- start_above_ms].
local function workerid_acquire(keys, args)
  local err = arity('workerid_acquire', keys, args, 2, 4)
  if err then return err end
  local opts
  opts, err = options(args, { TTL = true, MAX = true })
  if not opts then return err end
  if not opts.TTL then return fail('syntax error: TTL is required') end
  local ttl, ttl_text = integer('TTL', opts.TTL, -2 ^ 63, 2 ^ 63)
  if not ttl then return ttl_text end
  local max, max_text = integer('MAX', opts.MAX or tostring(DEFAULT_POOL), -2 ^ 63, 2 ^ 63)
  if not max then return max_text end
  -- In the module's order: a MAX no pool size can be, then the TTL, then the MAX's range.
  local bad_max = fail(string.format('MAX %s must be between 1 and %d', max_text, MAX_POOL))
  if max < 0 or max >= 2 ^ 32 then return bad_max end
  err = check_ttl(ttl, ttl_text)
  if err then return err end
  if max == 0 or max > MAX_POOL then return bad_max end
  local ns = keys[1]
  local pool, now, mark = open_pool(ns, true)
  if not pool then return now end
  if pool.max ~= 0 and pool.max ~= max then
    return fail(string.format("MAX %d differs from this namespace's size %d: a namespace "
      .. 'keeps the size it was made with', max, pool.max))
  end
  pool.max = max
  -- The lowest free worker ID whose record is already in the past, else the one whose
  -- record ends soonest.
  local best, best_at = nil, nil
  for id = 0, max - 1 do
    local l = pool.leases[id]
    if not (l and l.expires > now) then
      local at = math.max(l and l.until_ms or 0, now)
      if not best or at < best_at then
        best, best_at = id, at
      end
      if best_at == now then break end
    end
  end
  if not best then
    return fail(string.format('all %d worker IDs of this namespace are leased', max))
  end
  local previous = pool.leases[best]
  local start = math.max(previous and previous.until_ms or 0, pool.grant_above, lease_fence)
  pool.token = math.max(pool.token + 1, now * TOKENS_PER_MS)
  pool.version = pool.version + 1
  pool.leases[best] = { token = pool.token, expires = now + ttl, until_ms = start, floor = start }
  write_pool(ns, pool, mark, best, now)
  return { best, pool.token, now + ttl, start }
end

-- FCALL workerid_renew 1 <ns> worker_id token TTL ms [UNTIL unix_ms]: [expires_at_ms,
-- until_ms].
local function workerid_renew(keys, args)
  local err = arity('workerid_renew', keys, args, 4, 6)
  if err then return err end
  local h
  h, err = holder_args(args)
  if not h then return err end
  local opts
  opts, err = options(args, { TTL = true, UNTIL = true }, 3)
  if not opts then return err end
  if not opts.TTL then return fail('syntax error: TTL is required') end
  local ttl, ttl_text = integer('TTL', opts.TTL, -2 ^ 63, 2 ^ 63)
  if not ttl then return ttl_text end
  local until_ms, until_text = 0, '0'
  if opts.UNTIL then
    until_ms, until_text = integer('UNTIL', opts.UNTIL, 0, 2 ^ 63 - 1)
    if not until_ms then return until_text end
  end
  err = check_ttl(ttl, ttl_text)
  if err then return err end
  local ns = keys[1]
  local pool, now, mark = open_pool(ns, true)
  if not pool then return now end
  if until_ms > now + HORIZON_MS then
    return fail(string.format("UNTIL %s is more than %d ms (idgen.workerid-horizon-ms) past the "
      .. "coordinator's clock %s", until_text, HORIZON_MS, decimal(now)))
  end
  local l
  l, err = holder(pool, h, now)
  if not l then return err end
  l.expires = now + ttl
  l.until_ms = math.max(l.until_ms, until_ms)
  pool.version = pool.version + 1
  write_pool(ns, pool, mark, h.worker, now)
  return { l.expires, l.until_ms }
end

-- FCALL workerid_release 1 <ns> worker_id token [UNTIL unix_ms]: OK, and the worker ID is
-- free at once; UNTIL lowers its record, never below where this holder started.
local function workerid_release(keys, args)
  local err = arity('workerid_release', keys, args, 2, 4)
    or (#args == 3 and arity('workerid_release', keys, args, 0, 0))
  if err then return err end
  local h
  h, err = holder_args(args)
  if not h then return err end
  local opts
  opts, err = options(args, { UNTIL = true }, 3)
  if not opts then return err end
  local used
  if opts.UNTIL then
    local text
    used, text = integer('UNTIL', opts.UNTIL, 0, 2 ^ 63 - 1)
    if not used then return text end
  end
  local ns = keys[1]
  local pool, now, mark = open_pool(ns, true)
  if not pool then return now end
  local l
  l, err = holder(pool, h, now)
  if not l then return err end
  l.expires = 0
  if used then
    l.until_ms = math.max(math.min(l.until_ms, used), l.floor)
  end
  pool.version = pool.version + 1
  write_pool(ns, pool, mark, h.worker, now)
  return redis.status_reply('OK')
end

-- FCALL_RO workerid_list 1 <ns>: [worker_id, token, expires_at_ms, until_ms] per live lease.
local function workerid_list(keys, args)
  local err = arity('workerid_list', keys, args, 0, 0)
  if err then return err end
  local pool, now = open_pool(keys[1], false)
  if not pool then return now end
  local live = {}
  for _, id in ipairs(pool.ids) do
    local l = pool.leases[id]
    if l.expires > now then
      table.insert(live, { id, l.token, l.expires, l.until_ms })
    end
  end
  return live
end

-- ==== Registration (the module's COMMANDS in lib.rs).

redis.register_function('snowflake_next', snowflake_next)
redis.register_function('dateseq_next', dateseq_next)
redis.register_function{
  function_name = 'dateseq_current',
  callback = dateseq_current,
  flags = { 'no-writes' },
}
redis.register_function{
  function_name = 'idgen_version',
  callback = function(keys, args)
    return arity('idgen_version', keys, args, 0, 0, 0, 0) or VERSION
  end,
  flags = { 'no-writes' },
}
redis.register_function('workerid_acquire', workerid_acquire)
redis.register_function('workerid_renew', workerid_renew)
redis.register_function('workerid_release', workerid_release)
redis.register_function{
  function_name = 'workerid_list',
  callback = workerid_list,
  flags = { 'no-writes' },
}
