"""State every worker and host shares: one store interface (:class:`.store.StateStore`, in process
memory or in Redis) and the records kept in it: work done once per key (:mod:`.once`), keys spent
once (:mod:`.single_use`), messages between requests (:mod:`.rendezvous`), changes every worker
hears of (:mod:`.changes`) and resource subscriptions (:mod:`.resource_subscriptions`)."""
