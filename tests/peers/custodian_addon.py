"""A stand-in for the jr2 Custodian, as a mitmproxy addon: swaps held values in, refuses the rest.

The real Custodian (Envoy + custodian.lua) intercepts TLS to every host a held secret is bound to, swaps the
Stand-in `jr2-held-<NAME>` for the value in the headers the secret names, and answers a request that carries no
Stand-in itself, with a `text/plain` 403 that starts `jr2 custodian: `. This addon does the same for the tests.

Configuration comes from the environment, never argv (the value is a secret):
  JR2_HELD_NAME     the held secret's name, e.g. JR2_PROVIDER_API_KEY
  JR2_HELD_VALUE    its value
  JR2_HELD_HOSTS    comma-separated host:port the secret is bound to
  JR2_HELD_HEADERS  comma-separated headers it may ride in (default: authorization)
"""

import os

from mitmproxy import http

NAME = os.environ["JR2_HELD_NAME"]
VALUE = os.environ["JR2_HELD_VALUE"]
HOSTS = {h.strip() for h in os.environ["JR2_HELD_HOSTS"].split(",") if h.strip()}
HEADERS = [h.strip().lower() for h in os.environ.get("JR2_HELD_HEADERS", "authorization").split(",") if h.strip()]
STAND_IN = "jr2-held-" + NAME
CREDENTIAL_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization", *HEADERS}


def request(flow: http.HTTPFlow) -> None:
    target = f"{flow.request.host}:{flow.request.port}"
    if target not in HOSTS:
        return  # tunneled as it is
    swapped = False
    for header in HEADERS:
        value = flow.request.headers.get(header)
        if value is None:
            continue
        scheme, _, rest = value.partition(" ")
        if value == STAND_IN:
            flow.request.headers[header] = VALUE
            swapped = True
        elif rest == STAND_IN:
            flow.request.headers[header] = f"{scheme} {VALUE}"
            swapped = True
    if not swapped:
        body = f"jr2 custodian: {target} needs the stand-in of {NAME} in {', '.join(HEADERS)}\n"
        flow.response = http.Response.make(403, body, {"content-type": "text/plain"})
        return
    for header in CREDENTIAL_HEADERS - set(HEADERS):
        if header in flow.request.headers:
            del flow.request.headers[header]
