-- A stand-in for lpack (the seed's "pack" module, a C library V-REP loads),
-- on top of Lua 5.3's own string.pack, for the formats the seed's script
-- uses: 'A' one character (unpack) or a whole string (pack), 'f' a native
-- float, little-endian on the machines the bridge runs on. As lpack, unpack
-- returns the next position first.
local native_pack, native_unpack = string.pack, string.unpack

string.unpack = function(s, fmt, init)
  local f = {"<"}
  for c in fmt:gmatch(".") do
    if c == "A" then f[#f + 1] = "c1"
    elseif c == "f" then f[#f + 1] = "f"
    else error("pack stand-in: format '" .. c .. "' is not lpack's A or f") end
  end
  local vals = table.pack(native_unpack(table.concat(f), s, init or 1))
  return vals[vals.n], table.unpack(vals, 1, vals.n - 1)
end

string.pack = function(fmt, ...)
  local args, parts, i = table.pack(...), {}, 1
  for c in fmt:gmatch(".") do
    local v = args[i]
    i = i + 1
    if c == "A" then parts[#parts + 1] = v
    elseif c == "f" then parts[#parts + 1] = native_pack("<f", v)
    else error("pack stand-in: format '" .. c .. "' is not lpack's A or f") end
  end
  return table.concat(parts)
end

return true
