"""Drives a ticket server with other people's clients: redis-py and valkey-glide.

Usage: ticket_clients.py PORT. Prints one JSON object with what each client got; exits non-zero
when a client cannot connect or gets a wrong answer (tests/tests/python_clients.rs runs it).
"""

import asyncio
import json
import sys

import redis
from glide import GlideClient, GlideClientConfiguration, NodeAddress


def with_redis_py(port):
    r = redis.Redis(host="127.0.0.1", port=port)
    single = r.execute_command("TICKET.NEXT")
    # The default pipeline is a MULTI/EXEC transaction.
    pipe = r.pipeline()
    for _ in range(3):
        pipe.execute_command("TICKET.NEXT")
    batch = pipe.execute()
    role = r.info("replication")["role"]
    return {"single": single, "transaction": batch, "role": role}


async def with_glide(port):
    # At connect glide sends INFO REPLICATION and needs role:master.
    config = GlideClientConfiguration([NodeAddress("127.0.0.1", port)], request_timeout=2000)
    client = await GlideClient.create(config)
    tickets = [await client.custom_command(["TICKET.NEXT"]) for _ in range(3)]
    await client.close()
    return {"tickets": tickets}


def main():
    port = int(sys.argv[1])
    result = {"redis_py": with_redis_py(port), "glide": asyncio.run(with_glide(port))}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
