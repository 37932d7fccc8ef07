-- Runs the seed's V-REP server script outside the simulator (docs/vrep.md
-- §3): a stub of the simulator's sim table, a console, and the script's
-- thread function called as V-REP would. The simulation time follows the
-- wall clock in steps of 50 ms; each joint's angle integrates its target
-- velocity over that time.
--
-- usage: lua5.3 az_harness.lua SCRIPT  (AZ_PORT: the port, 0 = any)
local socket = require("socket")
local dt = 0.05
local t0 = socket.gettime()

local function now()
  return math.floor((socket.gettime() - t0) / dt) * dt
end

local joints, handles = {}, {}
local function joint(h)
  local j = joints[h]
  if not j then error("stub sim: no object with handle " .. tostring(h)) end
  local t = now()
  j.q = j.q + j.v * (t - j.t)
  j.t = t
  return j
end

sim = {}
function sim.getObjectHandle(name)
  name = name:gsub("^/", "")
  if not handles[name] then
    handles[name] = #joints + 1
    joints[#joints + 1] = {q = 0, v = 0, t = now()}
  end
  return handles[name]
end
sim.getObject = sim.getObjectHandle
function sim.setJointTargetVelocity(h, v) joint(h).v = v end
function sim.getJointPosition(h) return joint(h).q end
function sim.getSimulationTime() return now() end
-- V-REP 3.x's global names, for older scripts.
simGetObjectHandle = sim.getObjectHandle
simSetJointTargetVelocity = sim.setJointTargetVelocity
simGetJointPosition = sim.getJointPosition
simGetSimulationTime = sim.getSimulationTime

function printToConsole(...)
  print(...)
  io.stdout:flush()
end

local script = arg[1]
local dir = script:match("^(.*)/[^/]*$") or "."
local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. dir .. "/?.lua;" .. package.path

dofile(script)
portNb = tonumber(os.getenv("AZ_PORT") or "33211")
io.stdout:setvbuf("line")
sysCall_threadmain()
