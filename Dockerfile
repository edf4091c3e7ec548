# Magnetar container image: the static magnetar binary on an empty base,
# running `magnetar standalone` by default.
#
#   scripts/build-image [TAG]     builds the binary and this image
#                                 (buildah, podman or docker)
#   docker run -p 6650:6650 -p 8080:8080 -v magnetar-data:/data magnetar:TAG
#
# The build context is the staging directory scripts/build-image prepares
# (rootfs/magnetar, rootfs/conf/*.conf, rootfs/data), so the image needs
# no base image and no network to build.
FROM scratch

LABEL org.opencontainers.image.title="Magnetar" \
      org.opencontainers.image.description="Pulsar-compatible messaging with its own BookKeeper-style storage" \
      org.opencontainers.image.source="https://github.com/magnetar-mq/magnetar"

COPY rootfs/magnetar /magnetar
COPY rootfs/conf/ /conf/
COPY --chown=10000:10000 rootfs/data/ /data/

USER 10000:10000
WORKDIR /data
VOLUME ["/data"]

# Pulsar binary protocol, admin/lookup HTTP, and their TLS ports.
EXPOSE 6650 8080 6651 8443

ENTRYPOINT ["/magnetar"]
CMD ["standalone", "--config", "/conf/standalone.conf", "--data-dir", "/data"]
