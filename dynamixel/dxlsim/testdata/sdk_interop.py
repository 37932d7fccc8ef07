"""Drive the simulated Emio bus with the official ROBOTIS Python SDK.

Usage: python3 sdk_interop.py PORT

PORT is the simulator's pseudo-terminal (TestOfficialSDK starts it). The
script runs the SDK calls a Dynamixel program makes, checks every answer,
prints a JSON summary on stdout and exits 1 on any mismatch (2 when it cannot
start). The SDK does not stuff what it sends, so no value written here
contains FF FF FD.
"""

import json
import sys
import time

import dynamixel_sdk as sdk
import dynamixel_sdk.port_handler as sdk_port

# The SDK waits 2 x LATENCY_TIMER + 2 ms for a status (34 ms at 1 Mbps), and
# it checks that deadline after a read that found nothing, so a simulator or a
# script descheduled for longer on a loaded machine reads as a missing status.
# Every call that expects an answer gets seconds: the wait ends at the status,
# and the deadline only bounds a failure.
LATENCY_TIMER_MS = 2500
# The absent servo's ping waits out the whole timeout, whatever its length;
# keep that one short.
ABSENT_LATENCY_TIMER_MS = 16
sdk_port.LATENCY_TIMER = LATENCY_TIMER_MS

IDS = [0, 1, 2, 3]
ABSENT_ID = 9
MODEL_XM430_W210 = 1030
BAUD = 1000000
ADDR_TORQUE_ENABLE = 64
ADDR_GOAL_POSITION = 116
ADDR_PRESENT_POSITION = 132
START_POSITION = 2048  # the simulator's power-up position
GOALS = {0: 1024, 1: 1536, 2: 2560, 3: 3072}
# The simulated servos settle in about 0.3 s of the simulator's clock, counted
# from when it handles the sync write, which a loaded machine may delay: poll
# until they are there, bounded by this.
SETTLE_TIMEOUT_S = 10.0
# A broadcast ping listens for a fixed ~0.8 s window (not LATENCY_TIMER) and
# then parses what it got; it is asked again when a loaded machine delayed
# some statuses past that window, bounded by this many attempts.
BROADCAST_PING_ATTEMPTS = 5


def le32(value):
    return [sdk.DXL_LOBYTE(sdk.DXL_LOWORD(value)), sdk.DXL_HIBYTE(sdk.DXL_LOWORD(value)),
            sdk.DXL_LOBYTE(sdk.DXL_HIWORD(value)), sdk.DXL_HIBYTE(sdk.DXL_HIWORD(value))]


def main():
    if len(sys.argv) != 2:
        print("usage: sdk_interop.py PORT", file=sys.stderr)
        return 2
    checks = []

    def check(name, ok, **detail):
        checks.append({"check": name, "ok": bool(ok), **detail})

    port = sdk.PortHandler(sys.argv[1])
    if not port.openPort() or not port.setBaudRate(BAUD):
        print(json.dumps({"ok": False, "error": "cannot open %s at %d baud" % (sys.argv[1], BAUD)}))
        return 2
    ph = sdk.PacketHandler(2.0)
    try:
        for dxl_id in IDS:
            model, res, err = ph.ping(port, dxl_id)
            check("ping %d" % dxl_id, res == sdk.COMM_SUCCESS and err == 0 and model == MODEL_XM430_W210,
                  model=model, result=ph.getTxRxResult(res), error=err)

        start = time.monotonic()
        sdk_port.LATENCY_TIMER = ABSENT_LATENCY_TIMER_MS
        try:
            _, res, _ = ph.ping(port, ABSENT_ID)
        finally:
            sdk_port.LATENCY_TIMER = LATENCY_TIMER_MS
        check("ping absent %d" % ABSENT_ID, res == sdk.COMM_RX_TIMEOUT, result=ph.getTxRxResult(res),
              ms=round((time.monotonic() - start) * 1000, 1))

        pos, res, err = ph.read4ByteTxRx(port, 1, ADDR_PRESENT_POSITION)
        check("read present position", res == sdk.COMM_SUCCESS and err == 0 and pos == START_POSITION,
              value=pos, result=ph.getTxRxResult(res), error=err)

        res, err = ph.write4ByteTxRx(port, 1, ADDR_GOAL_POSITION, 1000)
        check("write goal position", res == sdk.COMM_SUCCESS and err == 0, result=ph.getTxRxResult(res), error=err)
        goal, res, err = ph.read4ByteTxRx(port, 1, ADDR_GOAL_POSITION)
        check("read goal position back", res == sdk.COMM_SUCCESS and goal == 1000, value=goal,
              result=ph.getTxRxResult(res), error=err)

        # Out of the position limits: refused with Data Limit Error (6).
        res, err = ph.write4ByteTxRx(port, 1, ADDR_GOAL_POSITION, 5000)
        check("goal beyond the limit", res == sdk.COMM_SUCCESS and err == 6, result=ph.getTxRxResult(res), error=err)

        for dxl_id in IDS:
            res, err = ph.write1ByteTxRx(port, dxl_id, ADDR_TORQUE_ENABLE, 1)
            check("torque on %d" % dxl_id, res == sdk.COMM_SUCCESS and err == 0, result=ph.getTxRxResult(res), error=err)
        torque, res, err = ph.read1ByteTxRx(port, 2, ADDR_TORQUE_ENABLE)
        check("read torque back", res == sdk.COMM_SUCCESS and torque == 1, value=torque)

        writer = sdk.GroupSyncWrite(port, ph, ADDR_GOAL_POSITION, 4)
        for dxl_id in IDS:
            writer.addParam(dxl_id, le32(GOALS[dxl_id]))
        res = writer.txPacket()
        check("sync write goals", res == sdk.COMM_SUCCESS, result=ph.getTxRxResult(res))

        reader = sdk.GroupSyncRead(port, ph, ADDR_PRESENT_POSITION, 4)
        for dxl_id in IDS:
            reader.addParam(dxl_id)
        start = time.monotonic()
        reads = 0
        while True:
            reads += 1
            res = reader.txRxPacket()
            got = {dxl_id: reader.getData(dxl_id, ADDR_PRESENT_POSITION, 4) for dxl_id in IDS}
            if (res == sdk.COMM_SUCCESS and got == GOALS) or time.monotonic() - start > SETTLE_TIMEOUT_S:
                break
            time.sleep(0.05)
        check("sync read positions", res == sdk.COMM_SUCCESS and got == GOALS,
              positions=got, result=ph.getTxRxResult(res), reads=reads)

        res = reader.fastSyncRead()
        got = {dxl_id: reader.getData(dxl_id, ADDR_PRESENT_POSITION, 4) for dxl_id in IDS}
        check("fast sync read positions", res == sdk.COMM_SUCCESS and got == GOALS,
              positions=got, result=ph.getTxRxResult(res))

        for attempt in range(1, BROADCAST_PING_ATTEMPTS + 1):
            start = time.monotonic()
            found, res = ph.broadcastPing(port)
            ids = sorted(found)
            wrong = [i for i in ids if i not in IDS or found[i][0] != MODEL_XM430_W210]
            ok = res == sdk.COMM_SUCCESS and ids == IDS and not wrong
            # Missing or cut-off statuses are a matter of time; a wrong one is not.
            if ok or wrong:
                break
        check("broadcast ping", ok, ids=ids, result=ph.getTxRxResult(res), attempts=attempt,
              ms=round((time.monotonic() - start) * 1000, 1))

        for dxl_id in IDS:
            ph.write1ByteTxRx(port, dxl_id, ADDR_TORQUE_ENABLE, 0)
    finally:
        port.closePort()

    ok = all(c["ok"] for c in checks)
    print(json.dumps({"ok": ok, "checks": checks}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
