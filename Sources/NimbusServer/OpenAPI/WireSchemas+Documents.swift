/// JSON Schemas of the document and chunk wire types (`DocumentWire.swift`).
extension WireSchemas {
    static let documents: [(String, JSONValue)] = [
        ("DocumentKind", ["type": "string", "enum": ["file", "folder", "package"]]),
        ("DocumentChunk", object([("hash", string), ("size", integer)], required: ["hash", "size"])),
        (
            "DocumentContent",
            object(
                [
                    ("contentHash", string), ("size", integer), ("chunks", array(of: ref("DocumentChunk"))),
                    ("modifiedAt", integer),
                ], required: ["contentHash", "size", "chunks", "modifiedAt"])
        ),
        (
            "DocumentVersion",
            object(
                [
                    ("versionID", string), ("content", ref("DocumentContent")), ("device", string),
                    ("baseContentHash", string), ("savedAt", integer), ("replacedAt", integer),
                ], required: ["versionID", "content", "device", "savedAt"])
        ),
        (
            "DocumentItem",
            object(
                [
                    ("itemID", string), ("parentID", string), ("name", string), ("kind", ref("DocumentKind")),
                    ("current", ref("DocumentVersion")), ("conflicts", array(of: ref("DocumentVersion"))),
                    ("deletedAt", integer), ("nameIssues", array(of: string)), ("createdAt", integer),
                ], required: ["itemID", "name", "kind", "conflicts", "nameIssues"])
        ),
        ("DocumentChangesRequest", object([("syncToken", string), ("resultsLimit", integer)], required: [])),
        (
            "DocumentChangesResponse",
            object(
                [
                    ("items", array(of: ref("DocumentItem"))), ("removed", array(of: string)), ("syncToken", string),
                    ("moreComing", boolean), ("packageExtensions", array(of: string)),
                ], required: ["items", "removed", "syncToken", "moreComing"])
        ),
        (
            "DocumentOperation",
            object(
                [
                    (
                        "operationType",
                        ["type": "string", "enum": ["save", "move", "delete", "resolve", "restore", "purge"]]
                    ),
                    ("itemID", string), ("parentID", string), ("name", string), ("kind", ref("DocumentKind")),
                    ("baseContentHash", string), ("content", ref("DocumentContent")), ("versionIDs", array(of: string)),
                ], required: ["operationType", "itemID"])
        ),
        (
            "DocumentModifyRequest",
            object([("operations", array(of: ref("DocumentOperation"))), ("device", string)], required: ["operations"])
        ),
        (
            "DocumentResult",
            object(
                [
                    ("itemID", string), ("outcome", ["type": "string", "enum": ["applied", "conflict", "merged", "failed"]]),
                    ("item", ref("DocumentItem")), ("serverErrorCode", string), ("reason", string),
                ], required: ["itemID", "outcome"])
        ),
        (
            "DocumentModifyResponse",
            object([("results", array(of: ref("DocumentResult"))), ("syncToken", string)], required: ["results", "syncToken"])
        ),
        ("DocumentVersionsRequest", object([("itemID", string)], required: ["itemID"])),
        (
            "DocumentVersionsResponse",
            object(
                [("item", ref("DocumentItem")), ("history", array(of: ref("DocumentVersion")))], required: ["item", "history"])
        ),
        ("DocumentTrashResponse", object([("items", array(of: ref("DocumentItem")))], required: ["items"])),
        ("ChunkBytes", ["type": "string", "format": "binary"]),
        ("ChunkBundle", ["type": "string", "format": "binary"]),
        (
            "ChunksAnnouncement",
            object(
                [("itemID", string), ("from", integer), ("chunks", array(of: ref("DocumentChunk"))), ("device", string)],
                required: ["itemID", "from", "chunks"])
        ),
        ("ChunksFetchRequest", object([("hashes", array(of: string))], required: ["hashes"])),
        ("ChunksMissingRequest", object([("hashes", array(of: string))], required: ["hashes"])),
        ("ChunksMissingResponse", object([("missing", array(of: string))], required: ["missing"])),
    ]
}
