# One image for every process type (web, worker, clock); the command picks the role.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY pipeline ./pipeline
COPY api ./api
COPY ops ./ops
# torch first and exact, from PyTorch's CPU wheel index: an unpinned torch (or PyPI's default
# Linux wheel) pulls a multi-GB CUDA build.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install torch==2.13.0 --index-url ${TORCH_INDEX_URL} \
    && pip install .

RUN useradd --create-home mempipe
USER mempipe
EXPOSE 8001
# Every interface, so a published port reaches it: the web refuses to start on this bind
# until AUTOMEM_API_TOKEN is set (docker run -e AUTOMEM_API_TOKEN=...).
CMD ["uvicorn", "api.app:create_app", "--factory", "--host", "0.0.0.0", "--port", "8001", "--no-access-log", "--http", "api.http_protocol:EnvelopeProtocol"]
