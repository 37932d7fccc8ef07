"""Drive the simulated Meca500 with the official Python client, mecademicpy.

Usage: python3 mecademicpy_interop.py HOST PORT

HOST:PORT is the simulator's control port (TestMecademicpy starts it).
mecademicpy takes a port after the address ("127.0.0.1:PORT"), so the robot's
own port 10000 is not needed. The script runs what a mecademicpy program does
(docs/meca500.md §4, §12): connect, activate, home, move and wait, stream
joint velocities, be refused as a second client, disconnect. It checks every
answer, prints a JSON summary on stdout and exits 1 on any mismatch (2 when it
cannot start).
"""

import json
import sys
import time

import mecademicpy.robot as mdr

TARGET = [10, 20, 30, 0, 15, 0]
# Every wait is bounded by seconds: the waits end on the robot's messages, and
# the bound only limits a failure on a loaded machine.
WAIT_S = 20.0
# Joint 1 speed streamed by MoveJointsVel, °/s, and how long to stream.
VEL_J1 = 20.0
STREAM_S = 0.5
STREAM_PERIOD_S = 0.02


def causes(e):
    """The messages of an exception and of its causes and contexts."""
    out = []
    while e is not None and len(out) < 10:
        out.append("%s: %s" % (type(e).__name__, e))
        e = e.__cause__ or e.__context__
    return out


def main():
    if len(sys.argv) != 3:
        print("usage: mecademicpy_interop.py HOST PORT", file=sys.stderr)
        return 2
    address = "%s:%s" % (sys.argv[1], sys.argv[2])
    checks = []

    def check(name, ok, **detail):
        checks.append({"check": name, "ok": bool(ok), **detail})

    robot = mdr.Robot()
    try:
        robot.Connect(address=address, timeout=WAIT_S)
    except Exception as e:  # pylint: disable=broad-exception-caught
        print(json.dumps({"ok": False, "error": "connect %s: %s" % (address, e)}))
        return 2
    try:
        info = robot.GetRobotInfo()
        check("connect", robot.IsConnected() and info.version.major >= 9,
              model=str(info.model), version=str(info.version), serial=str(info.serial))

        robot.ActivateRobot()
        robot.WaitActivated(timeout=WAIT_S)
        check("activate", robot.GetStatusRobot().activation_state)

        robot.Home()
        robot.WaitHomed(timeout=WAIT_S)
        check("home", robot.GetStatusRobot().homing_state)

        robot.MoveJoints(*TARGET)
        robot.WaitIdle(timeout=WAIT_S)
        joints = robot.GetRtTargetJointPos(synchronous_update=True, timeout=WAIT_S)
        err = max(abs(a - b) for a, b in zip(joints, TARGET))
        check("MoveJoints reaches the target", err < 0.1, joints=list(joints), error=err)

        robot.SetVelTimeout(0.1)
        start = time.monotonic()
        while time.monotonic() - start < STREAM_S:
            robot.MoveJointsVel(VEL_J1, 0, 0, 0, 0, 0)
            time.sleep(STREAM_PERIOD_S)
        # The velocity timeout stops the robot; WaitIdle sees it at rest.
        robot.WaitIdle(timeout=WAIT_S)
        moved = robot.GetRtTargetJointPos(synchronous_update=True, timeout=WAIT_S)
        check("MoveJointsVel moves joint 1 only", moved[0] > TARGET[0] + 1
              and max(abs(a - b) for a, b in zip(moved[1:], TARGET[1:])) < 1e-6, joints=list(moved))
        time.sleep(0.2)
        still = robot.GetRtTargetJointPos(synchronous_update=True, timeout=WAIT_S)
        check("the velocity timeout stops it", still == moved, before=list(moved), after=list(still))

        second = mdr.Robot()
        try:
            second.Connect(address=address, timeout=WAIT_S)
            check("second client refused", False, error="connected")
            second.Disconnect()
        except Exception as e:  # pylint: disable=broad-exception-caught
            # mecademicpy wraps the cause: "Connection error: Message with id=3001" (§4).
            chain = causes(e)
            check("second client refused", any("3001" in c for c in chain), errors=chain)
        check("first client still connected", robot.IsConnected())

        robot.DeactivateRobot()
        robot.WaitDeactivated(timeout=WAIT_S)
        check("deactivate", not robot.GetStatusRobot().activation_state)
    except Exception as e:  # pylint: disable=broad-exception-caught
        check("no exception", False, error="%s: %s" % (type(e).__name__, e))
    finally:
        robot.Disconnect()
    check("disconnect", not robot.IsConnected())

    ok = all(c["ok"] for c in checks)
    print(json.dumps({"ok": ok, "checks": checks}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
