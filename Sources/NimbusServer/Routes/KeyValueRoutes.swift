import Hummingbird
import NimbusCore

/// `/kv/1/{store}/...`: the key-value store of the signed-in user, through an entitled app.
struct KeyValueRoutes {
    let service: KeyValueService

    func register(on router: Router<AppRequestContext>) {
        let kv = router.group("kv/1/:store", context: ServiceRequestContext.self)
        kv.get("values") { _, context in
            try await service.snapshot(try service.authorize(context, store: context.parameters.require("store")))
        }
        kv.post("changes") { request, context in
            let zone = try service.authorize(context, store: context.parameters.require("store"))
            return try await service.changes(zone, try await request.decode(as: KeyValueChangesRequest.self, context: context))
        }
        kv.post("modify") { request, context in
            let zone = try service.authorize(context, store: context.parameters.require("store"))
            return try await service.modify(zone, try await request.decode(as: KeyValueModifyRequest.self, context: context))
        }
    }
}
