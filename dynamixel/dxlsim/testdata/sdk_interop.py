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

# The SDK waits 2 x LATENCY_TIMER + 2 ms for a status (34 ms at 1 Mbps). On a
# loaded test machine the simulator can be descheduled longer than that, so
# widen the constant; the checks do not depend on it.
sdk_port.LATENCY_TIMER = 100

IDS = [0, 1, 2, 3]
ABSENT_ID = 9
MODEL_XM430_W210 = 1030
BAUD = 1000000
ADDR_TORQUE_ENABLE = 64
ADDR_GOAL_POSITION = 116
ADDR_PRESENT_POSITION = 132
START_POSITION = 2048  # the simulator's power-up position
GOALS = {0: 1024, 1: 1536, 2: 2560, 3: 3072}
SETTLE_S = 1.0  # the simulated servos settle in about 0.3 s


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
        _, res, _ = ph.ping(port, ABSENT_ID)
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

        time.sleep(SETTLE_S)

        reader = sdk.GroupSyncRead(port, ph, ADDR_PRESENT_POSITION, 4)
        for dxl_id in IDS:
            reader.addParam(dxl_id)
        res = reader.txRxPacket()
        got = {dxl_id: reader.getData(dxl_id, ADDR_PRESENT_POSITION, 4) for dxl_id in IDS}
        check("sync read positions", res == sdk.COMM_SUCCESS and got == GOALS,
              positions=got, result=ph.getTxRxResult(res))

        res = reader.fastSyncRead()
        got = {dxl_id: reader.getData(dxl_id, ADDR_PRESENT_POSITION, 4) for dxl_id in IDS}
        check("fast sync read positions", res == sdk.COMM_SUCCESS and got == GOALS,
              positions=got, result=ph.getTxRxResult(res))

        start = time.monotonic()
        found, res = ph.broadcastPing(port)
        ids = sorted(found)
        check("broadcast ping", res == sdk.COMM_SUCCESS and ids == IDS
              and all(found[i][0] == MODEL_XM430_W210 for i in ids),
              ids=ids, result=ph.getTxRxResult(res), ms=round((time.monotonic() - start) * 1000, 1))

        for dxl_id in IDS:
            ph.write1ByteTxRx(port, dxl_id, ADDR_TORQUE_ENABLE, 0)
    finally:
        port.closePort()

    ok = all(c["ok"] for c in checks)
    print(json.dumps({"ok": ok, "checks": checks}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
