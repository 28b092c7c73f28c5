"""The gateway's store: what it keeps, behind one interface (`storage`), with the statements
both databases share (`queries`), the SQLite file (`sqlite`, with `checkpoints` and
`ownership`) and PostgreSQL (`postgres`, its settings in `postgres_settings`). Every call is a
coroutine; SQLite's never wait. The interface knows no implementation: the process chooses one
where it is assembled (`open_store` in app/gateway/api.py). The floor at the bottom: it imports
nothing of the gateway above it.
"""
