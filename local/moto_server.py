"""
moto's server with one request at a time: `python3 local/moto_server.py -H HOST -p PORT`
takes the same arguments as `python3 -m moto.server`, and is how every moto Kaj starts is started
(test/support/moto.ts for the integration suites, scripts/rehearse-deploy.ts).

Why: `moto.server` runs werkzeug's threaded server, and moto's backends take no lock. A DynamoDB
UpdateItem checks its condition and then applies its SET/REMOVE actions one by one to the live
item, so under concurrent requests
  - two conditional writes to one item can both pass their condition (two claims of one task), and
  - a GetItem can read an item half updated: the `succeeded` status of a success write already
    there, its history entry not yet.
Real DynamoDB applies a conditional write atomically and isolated per item; this makes moto do so.

How: a WSGI wrapper holds one lock for the whole of each request (the backend call and building
the response body; the bytes are written to the socket after it is released). The server stays
threaded so that an SQS long poll (ReceiveMessage with WaitTimeSeconds) does not stall every other
request: while it waits for messages it lets go of the lock, exactly as if it were a series of
short polls, each atomic. (`threaded=False` would serialize too, but each consumer's long poll
would then hold up every other request for up to WaitTimeSeconds.)
"""
import threading

import moto.server
from moto.sqs.models import Queue

_lock = threading.Lock()
_holder = threading.local()


class SerializedApp:
    """Runs each WSGI request to completion, body included, before the next one starts."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        with _lock:
            _holder.held = True
            try:
                body = self.app(environ, start_response)
                try:
                    return [b"".join(body)]
                finally:
                    close = getattr(body, "close", None)
                    if close is not None:
                        close()
            finally:
                _holder.held = False


_wait_for_messages = Queue.wait_for_messages


def _wait_without_the_lock(self, timeout):
    # ReceiveMessage's long-poll loop sleeps here between looks at the queue; the other requests
    # (the SendMessage it is waiting for, to begin with) run meanwhile.
    if not getattr(_holder, "held", False):
        return _wait_for_messages(self, timeout)
    _holder.held = False
    _lock.release()
    try:
        return _wait_for_messages(self, timeout)
    finally:
        _lock.acquire()
        _holder.held = True


Queue.wait_for_messages = _wait_without_the_lock

_run_simple = moto.server.run_simple


def _run_serialized(hostname, port, application, **options):
    _run_simple(hostname, port, SerializedApp(application), **options)


moto.server.run_simple = _run_serialized

if __name__ == "__main__":
    moto.server.main()
