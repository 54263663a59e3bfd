import Foundation
import NimbusCore

/// `tokens/create` and `tokens/register`: subscription notifications for web clients, through the
/// server's web courier (`WebCourier`) instead of APNs.
extension RecordService {
    func createNotificationToken(_ database: RecordDatabase, _ request: TokensCreateRequest) throws -> TokensCreateResponse {
        let caller = try database.requireCaller()
        let environment = try Self.apnsEnvironment(request.apnsEnvironment, database)
        let token = server.push.courier.create(
            accountID: caller.userRecordName, container: database.container, environment: environment,
            now: server.configuration.now())
        return TokensCreateResponse(
            apnsEnvironment: environment, apnsToken: token, webcourierURL: "\(database.baseURL)/push/1/courier/\(token)")
    }

    func registerNotificationToken(_ database: RecordDatabase, _ request: TokensRegisterRequest) throws -> TokensRegisterResponse
    {
        let caller = try database.requireCaller()
        let environment = try Self.apnsEnvironment(request.apnsEnvironment, database)
        guard
            server.push.courier.register(
                token: request.apnsToken, accountID: caller.userRecordName, now: server.configuration.now())
        else {
            throw NimbusError.notFound("apnsToken is not a token tokens/create gave you (or it expired); create another")
        }
        return TokensRegisterResponse(apnsEnvironment: environment, apnsToken: request.apnsToken)
    }

    private static func apnsEnvironment(_ requested: String?, _ database: RecordDatabase) throws -> String {
        guard let requested else { return database.environment.rawValue }
        guard RecordDatabase.Environment(rawValue: requested) == database.environment else {
            throw NimbusError.badRequest("apnsEnvironment must be \(database.environment.rawValue), the environment of this URL")
        }
        return requested
    }
}
