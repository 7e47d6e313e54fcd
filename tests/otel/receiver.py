#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for thinkledger's tests (tests/it/otel.rs).

Listens on 127.0.0.1 (a free port), accepts `POST /v1/traces` with an
`application/x-protobuf` body, decodes it as an `ExportTraceServiceRequest` with the official
`opentelemetry-proto` package (the OTLP protobuf definitions, compiled by the OpenTelemetry
project), and writes each span to stdout as one JSON line. The first line is
`{"listening": PORT}`. Every request is answered with an empty `ExportTraceServiceResponse`;
a body that does not decode is answered 400 and reported as `{"error": ...}`. Runs until
killed.
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1 import trace_pb2

OUT = threading.Lock()


def emit(record):
    with OUT:
        sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
        sys.stdout.flush()


def value(any_value):
    """An OTLP AnyValue as plain JSON."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    inner = getattr(any_value, kind)
    if kind == "array_value":
        return [value(v) for v in inner.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in inner.values}
    if kind == "bytes_value":
        return inner.hex()
    return inner


def attributes(key_values):
    return {kv.key: value(kv.value) for kv in key_values}


def spans(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "traceState": span.trace_state,
                    "flags": span.flags,
                    "name": span.name,
                    "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                    "startTimeUnixNano": span.start_time_unix_nano,
                    "endTimeUnixNano": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "status": {
                        "code": trace_pb2.Status.StatusCode.Name(span.status.code),
                        "message": span.status.message,
                    },
                }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-protobuf":
            self.send_error(415)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as e:  # a body that is not the protobuf message
            emit({"error": f"undecodable ExportTraceServiceRequest: {e}"})
            self.send_error(400)
            return
        for span in spans(request):
            emit(span)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format, *args):  # noqa: A002 (the standard library's name)
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    emit({"listening": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
