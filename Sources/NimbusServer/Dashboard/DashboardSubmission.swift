import Foundation
import Hummingbird
import HummingbirdCore
import NimbusCore

/// How every form is handled: do the action; on success go to the next page (post, redirect, get); on
/// an error the person can fix, show the same page again with the error in the API's words.
enum DashboardSubmission {
    static func run(
        _ request: Request, done location: String, _ action: () async throws -> Void,
        failed page: (String, HTTPResponse.Status) async throws -> Response
    ) async throws -> Response {
        do {
            try await action()
        } catch {
            let wireError = ErrorMiddleware<AppRequestContext>.wireError(for: error, request: request)
            // The server's own failures keep their error page, which logs them with a uuid.
            guard wireError.code != .internalError, wireError.code != .tryAgainLater else { throw error }
            return try await page(wireError.reason, HTTPResponse.Status(code: wireError.code.httpStatus))
        }
        return DashboardRenderer.redirect(to: location)
    }
}

extension DashboardForm {
    /// The body of a submitted form (the session middleware has already read and checked it).
    static func read(_ request: Request) async throws -> DashboardForm {
        let body = try await request.body.collect(
            upTo: DashboardSessionMiddleware.maxFormBytes, orThrow: NimbusError(.requestTooLarge, "the form is larger than 4 MB"))
        return DashboardForm(encoded: String(buffer: body))
    }
}

/// Messages shown after a form succeeded, named in the redirect's query (never text from the URL).
enum DashboardNotice: String, Sendable {
    case teamCreated, appCreated, containerCreated, entitled, developerAdded, developerRemoved
    case typeCreated, fieldAdded, indexesSaved, schemaImported, schemaDeployed, developmentReset
    case roleCreated, grantSaved, roleMemberAdded, roleMemberRemoved
    case recordSaved, recordDeleted, recordsImported, fileUploaded, sessionRevoked, deviceRevoked
    case documentUploaded, folderCreated, documentRenamed, documentMoved, documentDeleted, versionRestored, conflictResolved
    case documentRestored, documentPurged, tokenCreated, tokenRevoked, keyAdded, keyRevoked

    var text: String {
        switch self {
        case .teamCreated: "The team was created."
        case .appCreated: "The app was created."
        case .containerCreated: "The container was created."
        case .entitled: "The app is entitled to the container."
        case .developerAdded: "The developer was added to the team."
        case .developerRemoved: "The developer was removed from the team."
        case .typeCreated: "The record type was created in development."
        case .fieldAdded: "The field was added in development. Records already saved need no migration."
        case .indexesSaved: "The indexes were saved in development."
        case .roleCreated: "The role was created in development."
        case .grantSaved: "The grant was saved in development."
        case .roleMemberAdded: "The account was given the role."
        case .roleMemberRemoved: "The account no longer has the role."
        case .schemaImported: "The schema was imported into development."
        case .schemaDeployed: "Development was deployed to production."
        case .developmentReset: "Development was reset to production's schema, and its records were deleted."
        case .recordSaved: "The record was saved."
        case .recordDeleted: "The record was deleted."
        case .recordsImported: "The records were imported."
        case .fileUploaded: "The file was uploaded and saved in the record."
        case .sessionRevoked: "The session was signed out."
        case .deviceRevoked: "The device was signed out everywhere."
        case .documentUploaded: "The file was uploaded."
        case .folderCreated: "The folder was created."
        case .documentRenamed: "The document was renamed."
        case .documentMoved: "The document was moved."
        case .documentDeleted: "The document was moved to Recently Deleted."
        case .versionRestored: "The earlier version is the current one again."
        case .conflictResolved: "The conflict was resolved."
        case .documentRestored: "The document was restored from Recently Deleted."
        case .documentPurged: "The document was deleted for good."
        case .tokenCreated: "The API token was created."
        case .tokenRevoked: "The API token was revoked: apps using it are refused from now on."
        case .keyAdded: "The server-to-server key was added."
        case .keyRevoked: "The server-to-server key was revoked."
        }
    }

    static func message(in uri: URI) -> String? {
        uri.queryParameters.get("notice").flatMap(DashboardNotice.init(rawValue:))?.text
    }
}
