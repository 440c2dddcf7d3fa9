"""A pytest plugin (pytest.ini): xdist's ``--dist loadfile`` that finishes after a worker crashes.

A test that takes its worker down (a segfault in a native library) must end the suite with that
test failed and every other test run. xdist 3.8's loadfile scheduler instead hangs: on a crash it
puts back every file the worker ever ran, finished ones too (a replacement then gets an empty
batch that never completes), reruns the test that crashed, and may hand a replacement a single
test, which a worker holds until a second arrives (pytest-xdist issues 784, 1323, 1327). This
scheduler puts back only the unfinished tests of the crashed worker's files, not the one that
crashed, and gives a worker at least three tests or the rest of the queue, with its shutdown. A
worker that died but is not yet removed (two crashes at once) gets nothing, its channel closed, nor
does a replacement still collecting: what they would have run stays queued for the others.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# A worker runs its next test once it holds the one after, or its shutdown (xdist's remote.py).
_LOW = 2


class CrashSafeLoadFile(LoadFileScheduling):
    def remove_node(self, node):
        """The test that was running when ``node`` died, or None when it had finished its work."""
        unfinished = {scope: unit for scope, unit in self.assigned_work.pop(node).items() if not all(unit.values())}
        if not unfinished:
            return None
        crashed = next(nodeid for unit in unfinished.values() for nodeid, done in unit.items() if not done)
        unfinished[self._split_scope(crashed)][crashed] = True  # reported failed by xdist: not run again
        self.workqueue.update((scope, unit) for scope, unit in unfinished.items() if not all(unit.values()))
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node) -> None:
        if node.shutting_down or node not in self.registered_collections:  # a replacement still collecting
            return
        try:
            while self.workqueue and self._pending_of(self.assigned_work.get(node, {})) <= _LOW:
                self._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()
        except OSError:  # the worker is dead; xdist removes it next
            pass

    def _assign_work_unit(self, node) -> None:
        scope, unit = next(iter(self.workqueue.items()))
        try:
            super()._assign_work_unit(node)
        except OSError:
            del self.assigned_work[node][scope]
            self.workqueue[scope] = unit
            self.workqueue.move_to_end(scope, last=False)
            raise


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return CrashSafeLoadFile(config, log)
    return None
