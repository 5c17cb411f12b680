"""An image's content id (sha256:...) from the server's container engine: what an algorithm
version pins at registration, so that a tag moved later never changes what it runs."""

from __future__ import annotations

from collections.abc import Callable

from trainyard.domain.errors import FailedPrecondition, InvalidArgument

# A reference (tag or id) to the content id it names now; InvalidArgument naming `image` for
# one the engine does not hold, FailedPrecondition where no engine answers.
ImageIds = Callable[[str], str]
ENGINE_TIMEOUT_S = 30.0


def engine_image_ids(base_url: str = "") -> ImageIds:
    """The resolver of the engine at base_url ("": DOCKER_HOST or the local socket), the one
    the Docker executor runs containers on. The Docker SDK is loaded at the first call only,
    so a server that runs no containers never loads it."""

    def image_id(image: str) -> str:
        try:
            import docker
            import docker.errors

            # The executor's module also mends the SDK's connect, which leaves its socket
            # open when no engine listens; its API version is the one containers run with.
            from trainyard.executors.docker import API_VERSION, engine_address
        except ImportError:  # pragma: no cover - the SDK is a dependency of the server
            raise FailedPrecondition("image: the Docker SDK is not installed on the server, "
                                     f"so {image!r} cannot be pinned to its id") from None
        try:
            client = docker.APIClient(timeout=ENGINE_TIMEOUT_S, version=API_VERSION,
                                      **engine_address(base_url))
        except docker.errors.DockerException as exc:
            raise _no_engine(image, exc) from None
        try:
            found = client.inspect_image(image)
        except docker.errors.ImageNotFound:
            raise InvalidArgument("image", f"{image!r} is not an image of the server's "
                                  "container engine; build or load it there first "
                                  "('trainyard images build')") from None
        except docker.errors.APIError as exc:
            if exc.is_client_error():  # a reference the engine refuses to read
                raise InvalidArgument("image", f"{image!r}: {exc.explanation or exc}") \
                    from None
            raise _no_engine(image, exc) from None
        except (docker.errors.DockerException, OSError) as exc:  # requests' errors too
            raise _no_engine(image, exc) from None
        finally:
            client.close()
        return str(found["Id"])

    return image_id


def _no_engine(image: str, exc: Exception) -> FailedPrecondition:
    return FailedPrecondition(f"image: the server's container engine did not answer, so image "
                              f"{image!r} cannot be pinned to its id: {exc}")
