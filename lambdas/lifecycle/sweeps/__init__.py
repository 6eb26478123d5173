"""What runs on a timer or on the dead-letter queue, not on a caller's request or a job's attempt.

- `recovery`: `Sweeper`, jobs whose message was lost or whose worker died, sent again;
- `dead_letter`: `DeadLetterConsumer`, the one place a job is declared lost and someone is told;
- `start_times`: jobs that start later (`delay_until`, `send_if_pending`, `hand_over_due`).
"""
