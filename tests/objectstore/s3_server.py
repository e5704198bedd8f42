"""A real S3-compatible server on 127.0.0.1 for the object-storage tests: moto's server mode
(the HTTP server s3fs's own suite uses), behind a small fault proxy that can answer 503 SlowDown
or drop the connection for the next N requests (throttling and network faults, injected)."""

from __future__ import annotations

import http.client
import logging
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass
class Faults:
    """What the proxy does to the next requests: ``pending`` is a list of "503" / "drop"."""

    pending: list[str] = field(default_factory=list)
    injected: dict[str, int] = field(default_factory=lambda: {"503": 0, "drop": 0})
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> str | None:
        with self.lock:
            if not self.pending:
                return None
            kind = self.pending.pop(0)
            self.injected[kind] += 1
            return kind

    def add(self, *kinds: str) -> None:
        with self.lock:
            self.pending.extend(kinds)


def _enforce_credentials(endpoint: str) -> tuple[str, str]:
    """Make the server check signatures (moto accepts any key by default): its first three
    requests, unauthenticated, create a user with an S3 policy and its key; every later request
    must be signed with that key, so a wrong secret is refused as by a real store."""
    import boto3
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    settings.INITIAL_NO_AUTH_ACTION_COUNT = ActionAuthenticatorMixin.request_count + 3
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",
        region_name="us-east-1",
    )
    iam.create_user(UserName="forge")
    policy = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'
    iam.put_user_policy(UserName="forge", PolicyName="s3", PolicyDocument=policy)
    key = iam.create_access_key(UserName="forge")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def _handler(upstream: tuple[str, int], faults: Faults) -> type[BaseHTTPRequestHandler]:
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            kind = faults.next()
            if kind == "drop":  # the connection dies before any answer
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if kind == "503":
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(_SLOWDOWN)))
                self.end_headers()
                if self.command != "HEAD":  # as S3: a HEAD answer has no body (the client reads none)
                    self.wfile.write(_SLOWDOWN)
                return
            conn = http.client.HTTPConnection(*upstream, timeout=30)
            headers = dict(self.headers.items())  # Host kept: it is part of the signature
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            head = self.command == "HEAD"  # its Content-Length is the object's size, not the body's
            for k, v in resp.getheaders():
                if k.lower() not in {"transfer-encoding", "connection"} and (head or k.lower() != "content-length"):
                    self.send_header(k, v)
            if not head:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Proxy


class S3Server:
    """moto on 127.0.0.1 and the fault proxy in front of it; ``endpoint`` is the proxy's URL."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        self.direct = f"http://{host}:{port}"
        self.access_key, self.secret_key = _enforce_credentials(self.direct)
        self.faults = Faults()
        self.proxy = ThreadingHTTPServer(("127.0.0.1", 0), _handler((host, port), self.faults))
        self.proxy.daemon_threads = True
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.proxy.server_address[1]}"

    def env(self) -> dict[str, str]:
        """The environment a process needs to use the server (credentials only from here)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }

    def make_bucket(self, name: str) -> None:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.direct,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
        ).create_bucket(Bucket=name)

    def stop(self) -> None:
        self.proxy.shutdown()
        self.moto.stop()
