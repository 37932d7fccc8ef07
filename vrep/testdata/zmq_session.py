"""A scripted session of the official CoppeliaSim ZMQ remote API client
(coppeliasim-zmqremoteapi-client, protocol version 2) against a scene:
the calls a relay makes, in a relay's order. Prints the transcript as JSON;
the Go backend runs the same session and must print the same.

usage: python3 zmq_session.py PORT
"""
import json
import sys

from coppeliasim_zmqremoteapi_client import RemoteAPIClient

client = RemoteAPIClient(host="127.0.0.1", port=int(sys.argv[1]))
sim = client.require("sim")
out = []
left = sim.getObject("/MotorLeft")
right = sim.getObject("/MotorRight")
out.append(["handles", left, right])
out.append(["state", sim.getSimulationState()])
out.append(["stepping", sim.setStepping(True)])
sim.startSimulation()
out.append(["state", sim.getSimulationState()])
for k in range(10):
    sim.setJointTargetVelocity(left, 1.0)
    sim.setJointTargetVelocity(right, -0.5)
    sim.step()
    out.append(["step", sim.getSimulationTime(), sim.getJointPosition(left), sim.getJointPosition(right)])
try:
    sim.getObject("/Nowhere")
    out.append(["error", None])
except Exception as e:
    out.append(["error", "does not exist" in str(e)])
sim.stopSimulation()
out.append(["state", sim.getSimulationState()])
print(json.dumps(out))
