"""Calls that outlive their request: the task records and their results (:mod:`.records`), the jobs
an engine carries (:mod:`.jobs`), the engines that run them
(:mod:`.engines`: a bounded pool of threads, or Celery) and the Celery engine's outbox (:mod:`.outbox`),
the runner and its finishers (:mod:`.runner`), the callbacks of ended tasks (:mod:`.callbacks`,
:mod:`.callback_queue`), a graceful stop (:mod:`.shutdown`), the cancel watch (:mod:`.cancel_watch`)
and the questions a running task asks its caller (:mod:`.task_input`). What they keep (records,
leases, the outbox's jobs, the callbacks waiting) is kept through the state store's one interface
(:mod:`flask_tooldiscovery.state`), the same code in process memory and in Redis: nothing here
talks to Redis itself."""
