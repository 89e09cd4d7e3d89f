"""Who a member is, as the group leader and the members tell: the client id inside a broker-made
member id, and the user data this project's assignor sends in its subscriptions (the rack and the
client id) and assignments (:meth:`streaming.apply.plan.Decision.user_data`)."""

from __future__ import annotations

import json
import re
from typing import Any

USER_DATA_KEY = "rebalancer"
USER_DATA_VERSION = 1

_UUID_SUFFIX = re.compile(
    r"-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def client_id_from_member_id(member_id: str | None) -> str | None:
    """The client id in a broker-made member id (``<client id>-<UUID>``); None when it is not
    one."""
    if not member_id:
        return None
    m = _UUID_SUFFIX.search(member_id)
    return member_id[:m.start()] if m and m.start() > 0 else None


def subscription_user_data(rack: str | None, client_id: str | None = None) -> bytes:
    """User data of this project's subscriptions: the rack (a fallback for readers of subscription
    v0-2) and the client id, as JSON."""
    body: dict[str, Any] = {USER_DATA_KEY: USER_DATA_VERSION, "rack": rack or None}
    if client_id:
        body["client_id"] = client_id
    return json.dumps(body, separators=(",", ":")).encode()


def read_user_data(data: Any) -> dict[str, Any]:
    """This project's user data (subscription or assignment) as a dict; {} for anything else."""
    if data is None:
        return {}
    if isinstance(data, str):
        raw = data.encode()
    else:
        try:
            raw = bytes(data)
        except (TypeError, ValueError):
            return {}
    if not raw.startswith(b"{"):
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return {}
    return body if isinstance(body, dict) and body.get(USER_DATA_KEY) else {}
