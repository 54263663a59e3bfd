import Hummingbird

/// Records every request's route, status and duration with the node's `ActivityRecorder`. It sits
/// outside the error middleware, so it sees the status a client got.
struct ActivityMiddleware<Context: RequestContext>: RouterMiddleware {
    let recorder: ActivityRecorder

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response
    {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            recorder.record(
                method: request.method.rawValue, route: context.endpointPath ?? "unknown route",
                status: Int(response.status.code),
                duration: ContinuousClock.now - start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            recorder.record(
                method: request.method.rawValue, route: context.endpointPath ?? "unknown route", status: Int(status),
                duration: ContinuousClock.now - start)
            throw error
        }
    }
}
