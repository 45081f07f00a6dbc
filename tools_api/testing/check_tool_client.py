"""A CheckTool client in Python, for the service tests: proves the Tools API is usable outside
C++ with nothing but python3-grpcio and stubs generated from the .proto files at test time.

  check_tool_client.py --target unix:PATH --proto-root DIR --googleapis DIR --out DIR
      --name NAME [--inputs JSON | --inputs-json JSON] [--account NAME]

Prints "key: value" lines like the C++ client.
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    p.add_argument("--proto-root", required=True)
    p.add_argument("--googleapis", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--inputs")
    p.add_argument("--inputs-json")
    p.add_argument("--account", default="")
    args = p.parse_args()

    os.makedirs(args.out, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I" + args.proto_root, "-I/usr/include",
         "-I" + args.googleapis, "--python_out=" + args.out, "--grpc_python_out=" + args.out,
         "leash/v1/tools.proto", "leash/v1/decision.proto", "google/rpc/status.proto"],
        check=True)
    sys.path.insert(0, args.out)

    import grpc
    from google.protobuf import json_format
    from google.rpc import status_pb2
    from leash.v1 import decision_pb2, tools_pb2, tools_pb2_grpc

    request = tools_pb2.CheckToolRequest(name=args.name, account=args.account)
    if args.inputs is not None:
        json_format.Parse(json.dumps({"inputs": json.loads(args.inputs)}), request)
    if args.inputs_json is not None:
        request.inputs_json = args.inputs_json

    def show(response):
        print("action:", decision_pb2.Action.Name(response.action))
        print("reason:", response.reason)
        print("ref:", response.ref)
        for f in response.findings:
            print("finding:", f.category, f.detector, f.json_path, f.masked)

    with grpc.insecure_channel(args.target) as channel:
        stub = tools_pb2_grpc.ToolsStub(channel)
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


if __name__ == "__main__":
    main()
