import Hummingbird
import NimbusCore

// Wire types are plain Codable in NimbusCore (the SDK shares them); the server answers with them.
extension SignUpResponse: ResponseEncodable {}
extension SignInResponse: ResponseEncodable {}
extension CallerResponse: ResponseEncodable {}
extension DeviceList: ResponseEncodable {}
extension AppPassword: ResponseEncodable {}
extension AppPasswordList: ResponseEncodable {}
extension KeyValueSnapshot: ResponseEncodable {}
extension KeyValueChangesResponse: ResponseEncodable {}
extension Team: ResponseEncodable {}
extension App: ResponseEncodable {}
extension Container: ResponseEncodable {}
extension APITokenInfo: ResponseEncodable {}
extension CreatedAPIToken: ResponseEncodable {}
extension ListResponse: ResponseEncodable {}
extension RecordsResponse: ResponseEncodable {}
extension RecordsQueryResponse: ResponseEncodable {}
extension ZonesResponse: ResponseEncodable {}
extension DatabaseChangesResponse: ResponseEncodable {}
extension ZoneChangesResponse: ResponseEncodable {}
extension UsersResponse: ResponseEncodable {}
extension CurrentUserResponse: ResponseEncodable {}
extension LegacyUsersResponse: ResponseEncodable {}
extension AccountProfile: ResponseEncodable {}
extension TokensCreateResponse: ResponseEncodable {}
extension TokensRegisterResponse: ResponseEncodable {}
extension SchemaDocument: ResponseEncodable {}
extension SchemaDeployResponse: ResponseEncodable {}
extension SubscriptionsResponse: ResponseEncodable {}
extension ServerKeyInfo: ResponseEncodable {}
extension AssetUploadResponse: ResponseEncodable {}
extension AssetUploadResult: ResponseEncodable {}
extension AssetRereferenceResponse: ResponseEncodable {}

/// The answer to every key-value write, so it is written by hand.
extension KeyValueModifyResponse: ResponseGenerator {
    package func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONBody(bytes: encoded()).response(from: request, context: context)
    }
}
extension DocumentChangesResponse: ResponseEncodable {}
extension DocumentModifyResponse: ResponseEncodable {}
extension DocumentVersionsResponse: ResponseEncodable {}
extension DocumentTrashResponse: ResponseEncodable {}
extension ChunksMissingResponse: ResponseEncodable {}
