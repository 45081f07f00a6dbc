"""A CheckTool client in Python, for the service tests: proves the Tools API is usable outside
C++ with nothing but python3-grpcio and stubs generated from the .proto files (at build time,
by //tools_api:check_tool_client_py_stubs).

  check_tool_client.py --target unix:PATH --stubs DIR --call NAME INPUTS [--call NAME INPUTS]...

INPUTS is the JSON value sent as CheckToolRequest.inputs. The calls are made in order from one
process (starting Python and loading grpc is most of the time); each call's answer is printed
as "key: value" lines like the C++ client's, after a "call: N" line (N counts from 1).
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    p.add_argument("--stubs", required=True)
    p.add_argument("--call", nargs=2, action="append", required=True, metavar=("NAME", "INPUTS"))
    args = p.parse_args()

    sys.path.insert(0, args.stubs)

    import grpc
    from google.protobuf import json_format
    from google.rpc import status_pb2
    from leash.v1 import decision_pb2, tools_pb2, tools_pb2_grpc

    def show(response):
        print("action:", decision_pb2.Action.Name(response.action))
        print("reason:", response.reason)
        print("ref:", response.ref)
        for f in response.findings:
            print("finding:", f.category, f.detector, f.json_path, f.masked)

    def call(stub, name, inputs):
        request = tools_pb2.CheckToolRequest(name=name)
        json_format.Parse(json.dumps({"inputs": json.loads(inputs)}), request)
        try:
            response = stub.CheckTool(request, timeout=20)
            print("code:", 0)
            show(response)
        except grpc.RpcError as e:
            print("code:", e.code().value[0])
            print("message:", e.details())
            trailers = dict(e.trailing_metadata() or ())
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            print("details_code:", status.code)
            from_details = tools_pb2.CheckToolResponse()
            if not status.details[0].Unpack(from_details):
                print("details: missing")
                return
            show(from_details)
            from_trailer = tools_pb2.CheckToolResponse.FromString(
                trailers["leash-check-tool-response-bin"])
            print("trailer_matches_details:",
                  "true" if from_trailer == from_details else "false")

    with grpc.insecure_channel(args.target) as channel:
        stub = tools_pb2_grpc.ToolsStub(channel)
        for number, (name, inputs) in enumerate(args.call, start=1):
            print("call:", number)
            call(stub, name, inputs)


if __name__ == "__main__":
    main()
