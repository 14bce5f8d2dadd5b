"""The whole message tree of a session, page by page (``Store.get_tree``)."""

from __future__ import annotations

from threadline.messages import decode_message
from threadline.store._contract.values import TreeNode
from threadline.store._sql.attach import AttachmentMixin
from threadline.store._sql.base import Tx

_SQL_TREE_PAGE = (
    "SELECT seq, parent_id, data FROM tl_messages WHERE app = ? AND session_id = ? AND seq > ? "
    "ORDER BY seq LIMIT ?"
)


class NodesMixin(AttachmentMixin):
    """Every message of a session with its parent, in ``seq`` order, paged."""

    def get_tree(
        self,
        app: str,
        session_id: str,
        *,
        after_seq: int = 0,
        limit: int = 1000,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[TreeNode]:
        """A page of the session's messages with their parents (``Store.get_tree``)."""

        def run(tx: Tx) -> list[TreeNode]:
            page = (_SQL_TREE_PAGE, (app, session_id, after_seq, limit))
            rows = self._session_rows(tx, app, session_id, page, 2, attachments)
            return [TreeNode(int(seq), parent, decode_message(data)) for seq, parent, data in rows]

        return self._read("get_tree", run)
