# redis-server with the idgen module loaded. BASE defaults to the official Redis 7 image; on a
# machine with no registry, docker/build-images.sh passes a base made from the host's redis-server.
# Build from the repository root after `cargo build --release -p redis-idgen`:
#   docker build -f docker/redis.Dockerfile -t idgen/redis-idgen .
# Run: docker run -p 127.0.0.1:6379:6379 idgen/redis-idgen worker-id 3 --protected-mode no
ARG BASE=redis:7
FROM ${BASE}
COPY target/release/libredis_idgen.so /usr/local/lib/redis/modules/libredis_idgen.so
EXPOSE 6379
# Words after the module path are its load arguments (worker-id N ...) until the first --option.
ENTRYPOINT ["redis-server", "--loadmodule", "/usr/local/lib/redis/modules/libredis_idgen.so"]
CMD ["worker-id", "0", "--protected-mode", "no", "--dir", "/data"]
