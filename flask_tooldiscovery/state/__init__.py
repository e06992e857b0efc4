"""State every worker and host shares: one store interface (:class:`.store.StateStore`: values with a
lifetime, compare-and-set, sets, ordered indexes, leases held by one owner, due lists, inboxes and
channels), in process memory (:mod:`.memory`) or in Redis (:mod:`.redis_store`, the only module
that talks to Redis), and the records kept in it: work done once per key (:mod:`.once`), keys spent
once (:mod:`.single_use`), messages between requests (:mod:`.rendezvous`), changes every worker
hears of (:mod:`.changes`) and resource subscriptions (:mod:`.resource_subscriptions`); the task
records, leases, outbox and callbacks of :mod:`flask_tooldiscovery.tasks` are kept in it too.

This module is the state's face to the dialects, the only way a dialect reaches it: the mailbox a
request waits in for another's message (:func:`.rendezvous.for_uri`, :class:`.rendezvous.Mailbox`:
MCP's answers to its server-to-client requests) and the change every worker hears of
(:class:`.changes.Change`: what an MCP stream turns into a notification). The other modules are
the services' own."""

from .changes import Change
from .rendezvous import Mailbox, for_uri

__all__ = ["Change", "Mailbox", "for_uri"]
