"""Cloud tasks: what a change that answers a task list runs, its record and its lock."""
