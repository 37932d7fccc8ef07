-- Wireshark dissector for the bridge's telemetry tap: the payload of the RTP
-- packets a link mirrors every tick to (docs/tap.md §3 and §4, the codec
-- tap/payload.go). Load it with
--
--   tshark -r CAPTURE -d udp.port==5004,rtp -X lua_script:bridge-tap.lua -V
--
-- or copy it into Wireshark's personal plugins folder. It takes RTP payload
-- type 96 (the tap's default); for another payload type use Decode As
-- (RTP payload type -> BRIDGETAP) or an SDP rtpmap naming "bridgetap".
-- Written for Lua 5.2 (Wireshark 4.0) and later: no bit operators.

local proto = Proto("bridgetap", "bridge telemetry tap")

local VERSION = 1
local HEADER = 48
local MAX_VALUES = 4096 -- a reader refuses more (tap.MaxValues)

local statuses = { [0] = "HANDSHAKING", [1] = "OK", [2] = "OK_NO_DELAY", [3] = "DESYNC", [4] = "TIMEOUT", [5] = "RECONNECTED" }
local states = { [0] = "starting", [1] = "handshaking", [2] = "running", [3] = "degraded", [4] = "stopped" }

local f = {
	version = ProtoField.uint8("bridgetap.version", "Version"),
	status = ProtoField.uint8("bridgetap.status", "Status", base.DEC, statuses),
	flags = ProtoField.uint8("bridgetap.flags", "Flags", base.HEX),
	late = ProtoField.bool("bridgetap.flags.late", "Reply late", 8, nil, 0x01),
	applied_flag = ProtoField.bool("bridgetap.flags.applied", "Command applied", 8, nil, 0x02),
	stale = ProtoField.bool("bridgetap.flags.stale", "Measurement stale", 8, nil, 0x04),
	overrun = ProtoField.bool("bridgetap.flags.overrun", "Overrun", 8, nil, 0x08),
	descriptor = ProtoField.bool("bridgetap.flags.descriptor", "Descriptor follows", 8, nil, 0x10),
	state = ProtoField.uint8("bridgetap.state", "Link state", base.DEC, states),
	m = ProtoField.uint16("bridgetap.m", "Measurement values (M)"),
	c = ProtoField.uint16("bridgetap.c", "Command values (C)"),
	seq = ProtoField.int64("bridgetap.seq", "Simulink seq"),
	tick = ProtoField.uint64("bridgetap.tick", "Tick"),
	deadline = ProtoField.absolute_time("bridgetap.deadline", "Deadline", base.UTC),
	sent = ProtoField.absolute_time("bridgetap.sent", "Sent", base.UTC),
	lateness = ProtoField.int32("bridgetap.lateness_ns", "Lateness (ns)"),
	latency = ProtoField.int32("bridgetap.reply_latency_ns", "Reply latency (ns)"),
	-- The vectors' values carry these names, so that -e bridgetap.measurement
	-- prints the whole vector; their parents are plain text.
	measurement = ProtoField.double("bridgetap.measurement", "Measurement"),
	command = ProtoField.double("bridgetap.command", "Command"),
	applied = ProtoField.double("bridgetap.applied", "Applied"),
	desc = ProtoField.none("bridgetap.desc", "Descriptor"),
	desc_length = ProtoField.uint16("bridgetap.desc.length", "Length"),
	desc_rate = ProtoField.double("bridgetap.desc.rate", "Rate (Hz)"),
	desc_link = ProtoField.string("bridgetap.desc.link", "Link"),
	desc_mfields = ProtoField.uint8("bridgetap.desc.measurement_fields", "Measurement fields"),
	desc_cfields = ProtoField.uint8("bridgetap.desc.command_fields", "Command fields"),
	desc_field = ProtoField.none("bridgetap.desc.field", "Field"),
	field_name = ProtoField.string("bridgetap.desc.field.name", "Name"),
	field_unit = ProtoField.string("bridgetap.desc.field.unit", "Unit"),
	field_count = ProtoField.uint16("bridgetap.desc.field.count", "Count"),
}
proto.fields = {}
for _, v in pairs(f) do
	table.insert(proto.fields, v)
end

local malformed = ProtoExpert.new("bridgetap.malformed", "Malformed bridge tap payload",
	expert.group.MALFORMED, expert.severity.ERROR)
proto.experts = { malformed }

local rtp_ssrc = Field.new("rtp.ssrc")

-- The last descriptor of each SSRC, and the first frame it was seen in: the
-- descriptor comes once a second, so the packets in between are named from
-- it; packets before it (in a GUI's random access) keep their indices.
local links = {}

function proto.init()
	links = {}
end

local function flag(v, bit)
	return math.floor(v / 2 ^ bit) % 2 == 1
end

local function bad(tree, text)
	tree:add_proto_expert_info(malformed, text)
	return text
end

-- ns (an Int64 of Unix ns) as an NSTime: Int64 arithmetic, since a Lua
-- double holds only 2^53 and Unix ns are near 2^61.
local function nstime(ns)
	local s, n = (ns / 1000000000):tonumber(), (ns % 1000000000):tonumber()
	if n < 0 then
		s, n = s - 1, n + 1000000000
	end
	return NSTime.new(s, n)
end

-- Parses the descriptor at off (docs/tap.md §4) into tree; returns it, or
-- nil and why. Every read is checked against the descriptor's own length.
local function dissect_descriptor(tvb, off, tree)
	local n = tvb:len()
	if off + 2 > n then
		return nil, "descriptor: no length"
	end
	local stop = off + 2 + tvb(off, 2):uint()
	if stop > n or stop - off < 2 + 8 + 1 + 1 + 1 then
		return nil, string.format("descriptor says %d bytes, %d there", tvb(off, 2):uint(), n - off - 2)
	end
	local t = tree:add(f.desc, tvb(off, stop - off))
	t:add(f.desc_length, tvb(off, 2))
	t:add(f.desc_rate, tvb(off + 2, 8))
	local d = { rate = tvb(off + 2, 8):float(), fields = { {}, {} } }
	local o = off + 10
	-- A string: one length byte, then UTF-8.
	local function str(field, parent)
		if o >= stop or o + 1 + tvb(o, 1):uint() > stop then
			return nil
		end
		local l = tvb(o, 1):uint()
		local s = ""
		if l > 0 then
			s = tvb(o + 1, l):string(ENC_UTF_8)
		end
		parent:add(field, tvb(o, 1 + l), s)
		o = o + 1 + l
		return s
	end
	d.link = str(f.desc_link, t)
	if not d.link then
		return nil, "descriptor: the link name runs past its end"
	end
	for i, count_field in ipairs({ f.desc_mfields, f.desc_cfields }) do
		if o >= stop then
			return nil, "descriptor: no field count"
		end
		local k = tvb(o, 1):uint()
		t:add(count_field, tvb(o, 1))
		o = o + 1
		for _ = 1, k do
			local start = o
			local ft = t:add(f.desc_field, tvb(o, 1))
			local name = str(f.field_name, ft)
			local unit = name and str(f.field_unit, ft)
			if not unit or o + 2 > stop then
				return nil, "descriptor: a field runs past its end"
			end
			local len = tvb(o, 2):uint()
			ft:add(f.field_count, tvb(o, 2))
			o = o + 2
			ft:set_len(o - start)
			ft:set_text(string.format("%s field: %s (%s) × %d", i == 1 and "Measurement" or "Command", name, unit, len))
			table.insert(d.fields[i], { name = name, unit = unit, len = len })
		end
	end
	t:append_text(string.format(": %s, %g Hz", d.link, d.rate))
	return d
end

-- Labels of a vector of n values from a descriptor's fields: "markers[0] (mm)",
-- or "name (unit)" for a field of one value; nil when they do not add up to n.
local function labels(fields, n)
	local out = {}
	for _, fd in ipairs(fields) do
		for j = 0, fd.len - 1 do
			local l = fd.name
			if fd.len > 1 then
				l = string.format("%s[%d]", l, j)
			end
			if fd.unit ~= "" then
				l = l .. " (" .. fd.unit .. ")"
			end
			out[#out + 1] = l
		end
	end
	if #out ~= n then
		return nil
	end
	return out
end

local function dissect(tvb, pinfo, tree)
	pinfo.cols.protocol = "BRIDGETAP"
	local n = tvb:len()
	local t = tree:add(proto, tvb())
	if n < 1 then
		pinfo.cols.info = bad(t, "empty payload")
		return
	end
	t:add(f.version, tvb(0, 1))
	local version = tvb(0, 1):uint()
	if version ~= VERSION then
		pinfo.cols.info = bad(t, string.format("unknown payload version %d (this dissector knows %d)", version, VERSION))
		return
	end
	if n < HEADER then
		pinfo.cols.info = bad(t, string.format("payload too short: %d bytes, the header alone is %d", n, HEADER))
		return
	end
	local status, flags = tvb(1, 1):uint(), tvb(2, 1):uint()
	t:add(f.status, tvb(1, 1))
	local ft = t:add(f.flags, tvb(2, 1))
	for _, b in ipairs({ f.late, f.applied_flag, f.stale, f.overrun, f.descriptor }) do
		ft:add(b, tvb(2, 1))
	end
	t:add(f.state, tvb(3, 1))
	local m, c = tvb(4, 2):uint(), tvb(6, 2):uint()
	t:add(f.m, tvb(4, 2))
	t:add(f.c, tvb(6, 2))
	local seq = tvb(8, 8):int64()
	t:add(f.seq, tvb(8, 8))
	t:add(f.tick, tvb(16, 8))
	t:add(f.deadline, tvb(24, 8), nstime(tvb(24, 8):int64()))
	local sent = tvb(32, 8):int64()
	local st = t:add(f.sent, tvb(32, 8), nstime(sent))
	if sent == Int64.new(0) then
		st:set_text("Sent: nothing sent (0)")
	end
	local lateness, latency = tvb(40, 4):int(), tvb(44, 4):int()
	t:add(f.lateness, tvb(40, 4))
	local lt = t:add(f.latency, tvb(44, 4))
	if latency == -1 then
		lt:set_text("Reply latency: no reply (-1)")
	end

	-- The info column, written before any error so that a bad vector or
	-- descriptor still shows the header.
	local ssrc = 0
	local sf = rtp_ssrc()
	if sf then
		ssrc = sf.value
	end
	local function info(link, err)
		local s = string.format("%s seq %s %s", link or string.format("ssrc 0x%08x", ssrc), tostring(seq),
			statuses[status] or ("status " .. status))
		if sent == Int64.new(0) then
			s = s .. " not sent"
		else
			s = s .. string.format(" late %.0f µs", lateness / 1000)
		end
		if latency == -1 then
			s = s .. " no reply"
		else
			s = s .. string.format(" rtt %.0f µs", latency / 1000)
		end
		for _, x in ipairs({ { 0, "late reply" }, { 2, "stale" }, { 3, "overrun" } }) do
			if flag(flags, x[1]) then
				s = s .. " [" .. x[2] .. "]"
			end
		end
		if err then
			s = s .. " [malformed: " .. err .. "]"
		end
		pinfo.cols.info = s
	end

	local known = links[ssrc]
	if m > MAX_VALUES or c > MAX_VALUES then
		info(known and known.desc.link, bad(t, string.format("%d measured and %d commanded values (at most %d)", m, c, MAX_VALUES)))
		return
	end
	local off = HEADER + 8 * (m + 2 * c)
	if n < off then
		info(known and known.desc.link, bad(t, string.format("payload too short: %d bytes, %d measured and %d commanded values need %d", n, m, c, off)))
		return
	end

	-- The vectors' parents first, the descriptor after them as in the
	-- payload, then the values: their names may come from this packet's
	-- descriptor.
	local parents = {}
	for i, v in ipairs({ { "Measurement", m, HEADER }, { "Command", c, HEADER + 8 * m }, { "Applied", c, HEADER + 8 * (m + c) } }) do
		if v[2] > 0 then
			parents[i] = t:add(tvb(v[3], 8 * v[2]), string.format("%s: %d value%s", v[1], v[2], v[2] == 1 and "" or "s"))
		else
			parents[i] = t:add(tvb(v[3], 0), v[1] .. ": none")
		end
	end
	local err
	if flag(flags, 4) then
		local d, why = dissect_descriptor(tvb, off, t)
		if not d then
			err = bad(t, why)
		elseif not labels(d.fields[1], m) or not labels(d.fields[2], c) then
			err = bad(t, string.format("descriptor: its fields do not add up to %d measured and %d commanded values", m, c))
		else
			local from = pinfo.number
			if known and known.from < from then
				from = known.from
			end
			known = { desc = d, from = from }
			links[ssrc] = known
		end
	elseif n > off then
		err = bad(t, string.format("%d bytes after the vectors and no descriptor flag", n - off))
	end
	if known and pinfo.number < known.from then
		known = nil
	end

	local names = { known and labels(known.desc.fields[1], m), known and labels(known.desc.fields[2], c) }
	names[3] = names[2]
	local o = HEADER
	for i, field in ipairs({ f.measurement, f.command, f.applied }) do
		for j = 1, (i == 1 and m or c) do
			local r = tvb(o, 8)
			local label = names[i] and names[i][j] or string.format("[%d]", j - 1)
			parents[i]:add(field, r):set_text(string.format("%s: %.15g", label, r:float()))
			o = o + 8
		end
	end
	info(known and known.desc.link, err)
	t:append_text(string.format(", %s, seq %s, %s", known and known.desc.link or string.format("SSRC 0x%08x", ssrc),
		tostring(seq), statuses[status] or ("status " .. status)))
end

-- A Lua error would show as a dissector bug; any left over is reported as a
-- malformed payload instead.
function proto.dissector(tvb, pinfo, tree)
	local ok, err = pcall(dissect, tvb, pinfo, tree)
	if not ok then
		tree:add_proto_expert_info(malformed, "bridgetap: " .. tostring(err))
	end
	return tvb:len()
end

DissectorTable.get("rtp.pt"):add(96, proto)
-- SDP's "a=rtpmap:PT bridgetap/1000000" maps another payload type.
pcall(function()
	DissectorTable.get("rtp_dyn_payload_type"):add("bridgetap", proto)
end)
