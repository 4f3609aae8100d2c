-- INFO idgen for redis_exporter's --script hook: every numeric idgen_* field becomes
-- redis_script_values{key="idgen_<field>"}, and two text fields become 0 or 1:
-- idgen_eviction_can_evict (1 unless "none") and idgen_state_file_error (1 when set).
-- Run it by hand with: redis-cli --eval ops/redis-exporter/idgen.lua
local out = {}
for line in string.gmatch(redis.call('INFO', 'idgen'), '[^\r\n]+') do
  local key, value = string.match(line, '^(idgen_[%w_]+):(.*)$')
  if key == 'idgen_eviction_can_evict' then
    value = (value == 'none') and '0' or '1'
  elseif key == 'idgen_state_file_error' then
    value = (value == '') and '0' or '1'
  end
  if key and string.match(value, '^%-?%d+%.?%d*$') then
    out[#out + 1] = key
    out[#out + 1] = value
  end
end
return out
