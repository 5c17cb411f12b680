"""The AdminService servicer: users, teams, tokens, queue access, the audit log, and the
service's history for a replay."""

from __future__ import annotations

import grpc

from trainyard.api import convert
from trainyard.api.auth import current_identity
from trainyard.api.convert_history import history_page_to_pb, since_from_pb
from trainyard.api.errors import grpc_errors
from trainyard.services.access import AccessService
from trainyard.services.history import HistoryService
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc


class AdminServicer(pb_grpc.AdminServiceServicer):
    def __init__(self, access: AccessService, history: HistoryService) -> None:
        self.access = access
        self.history = history

    @grpc_errors
    def CreateUser(self, request: pb.CreateUserRequest,
                   context: grpc.ServicerContext) -> pb.User:
        return convert.user_to_pb(self.access.create_user(current_identity(), request.name,
                                                          request.admin))

    @grpc_errors
    def ListUsers(self, request: pb.ListUsersRequest,
                  context: grpc.ServicerContext) -> pb.ListUsersResponse:
        return pb.ListUsersResponse(users=[convert.user_to_pb(u)
                                           for u in self.access.list_users(current_identity())])

    @grpc_errors
    def CreateTeam(self, request: pb.CreateTeamRequest,
                   context: grpc.ServicerContext) -> pb.Team:
        return convert.team_to_pb(self.access.create_team(current_identity(), request.name))

    @grpc_errors
    def ListTeams(self, request: pb.ListTeamsRequest,
                  context: grpc.ServicerContext) -> pb.ListTeamsResponse:
        return pb.ListTeamsResponse(teams=[convert.team_to_pb(t)
                                           for t in self.access.list_teams(current_identity())])

    @grpc_errors
    def AddTeamMember(self, request: pb.AddTeamMemberRequest,
                      context: grpc.ServicerContext) -> pb.Team:
        return convert.team_to_pb(self.access.add_member(current_identity(), request.team,
                                                         request.user))

    @grpc_errors
    def CreateToken(self, request: pb.CreateTokenRequest,
                    context: grpc.ServicerContext) -> pb.CreateTokenResponse:
        created = self.access.create_token(current_identity(), request.user,
                                           expires_in=float(request.expires_in_seconds),
                                           read_only=request.read_only)
        return pb.CreateTokenResponse(info=convert.token_to_pb(created.record),
                                      token=created.token)

    @grpc_errors
    def ListTokens(self, request: pb.ListTokensRequest,
                   context: grpc.ServicerContext) -> pb.ListTokensResponse:
        tokens = self.access.list_tokens(current_identity(), request.user)
        return pb.ListTokensResponse(tokens=[convert.token_to_pb(t) for t in tokens])

    @grpc_errors
    def RevokeToken(self, request: pb.RevokeTokenRequest,
                    context: grpc.ServicerContext) -> pb.TokenInfo:
        return convert.token_to_pb(self.access.revoke_token(current_identity(), request.id))

    @grpc_errors
    def SetQueueAccess(self, request: pb.QueueAccess,
                       context: grpc.ServicerContext) -> pb.QueueAccess:
        acl = self.access.set_queue_access(current_identity(), request.queue,
                                           list(request.users), list(request.teams))
        return convert.queue_access_to_pb(request.queue, acl)

    @grpc_errors
    def ListQueueAccess(self, request: pb.ListQueueAccessRequest,
                        context: grpc.ServicerContext) -> pb.ListQueueAccessResponse:
        return pb.ListQueueAccessResponse(queues=[
            convert.queue_access_to_pb(q, acl)
            for q, acl in sorted(self.access.queue_acls(current_identity()).items())])

    @grpc_errors
    def ListAudit(self, request: pb.ListAuditRequest,
                  context: grpc.ServicerContext) -> pb.ListAuditResponse:
        events = self.access.list_audit(current_identity(), request.limit)
        return pb.ListAuditResponse(events=[convert.audit_to_pb(e) for e in events])

    @grpc_errors
    def ExportHistory(self, request: pb.ExportHistoryRequest,
                      context: grpc.ServicerContext) -> pb.HistoryPage:
        page = self.history.export(current_identity(), since_from_pb(request),
                                   request.page_size, request.page_token)
        return history_page_to_pb(page)
