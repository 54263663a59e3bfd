import Hummingbird
import NimbusCore
import NimbusStore

/// `/documents/1/{container}/{environment}/…` and `/blobs/1/{container}/{environment}/…`: the
/// signed-in user's documents in a container, through an app entitled to it.
struct DocumentRoutes {
    let service: DocumentService
    let chunks: ChunkTransfers

    func register(on router: Router<AppRequestContext>) {
        let documents = router.group("documents/1/:container/:environment", context: ServiceRequestContext.self)
        documents.post("changes") { request, context in
            try await service.changes(
                try zone(context), try await request.decode(as: DocumentChangesRequest.self, context: context))
        }
        documents.post("modify") { request, context in
            let zone = try zone(context)
            return try await service.modify(
                zone, try await request.decode(as: DocumentModifyRequest.self, context: context),
                deviceID: context.session.deviceID)
        }
        documents.post("versions") { request, context in
            try await service.versions(
                try zone(context), try await request.decode(as: DocumentVersionsRequest.self, context: context))
        }
        documents.get("trash") { _, context in try await service.trash(try zone(context)) }

        let blobs = router.group("blobs/1/:container/:environment", context: ServiceRequestContext.self)
        blobs.post("missing") { request, context in
            try await chunks.missing(try zone(context), try await request.decode(as: ChunksMissingRequest.self, context: context))
        }
        blobs.post("upload") { request, context in
            try await chunks.upload(try zone(context), bundle: request.body)
            return Response(status: .noContent)
        }
        blobs.post("announce") { request, context in
            try await chunks.announce(
                try zone(context), try await request.decode(as: ChunksAnnouncement.self, context: context),
                deviceID: context.session.deviceID)
            return Response(status: .noContent)
        }
        blobs.post("fetch") { request, context in
            try await chunks.fetch(try zone(context), try await request.decode(as: ChunksFetchRequest.self, context: context))
        }
        blobs.put(":hash") { request, context in
            try await chunks.upload(try zone(context), hash: context.parameters.require("hash"), body: request.body)
            return Response(status: .noContent)
        }
        blobs.get(":hash") { request, context in
            try await chunks.download(try zone(context), hash: context.parameters.require("hash"), range: request.headers[.range])
        }
    }

    private func zone(_ context: ServiceRequestContext) throws -> ZoneKey {
        try service.authorize(
            context, container: context.parameters.require("container"), environment: context.parameters.require("environment"))
    }
}
