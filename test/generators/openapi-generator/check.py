# A client team's program on the Python client that openapi-generator makes from openapi.yaml
# (generated beside it into ./client by test/generators/openapi-generator.ts): upsert, list, an
# answer from a newer service, an import through the signed upload address with its results and
# failed lines (JSONL), events, and a stored image read back.
import json
import os
import time
import urllib.parse

from openapi_client import ApiClient, Configuration, EventsApi, ImportsApi, ItemsApi, StorageApi, models
from openapi_client.exceptions import ApiException
from openapi_client.models import (
    CreateImportRequest, EventType, GetItem200Response, ImportLineResult, ImportStatus, ItemPayload,
    ItemUpdatedData, MediaInput, MediaRole, MediaStatus, UpsertOutcome,
)
from open_enums import open_enums

open_enums(models)

RUN = os.environ['CATALOG_RUN']
WAIT_S = int(os.environ['CATALOG_WAIT_MS']) / 1000
ITEM_ID = f'{RUN}-mug'
CLIENT = ApiClient(Configuration(host=os.environ['CATALOG_API_URL'], access_token=os.environ['CATALOG_API_KEY']))
ITEMS, IMPORTS, EVENTS = ItemsApi(CLIENT), ImportsApi(CLIENT), EventsApi(CLIENT)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def until(what, check):
    """Polls until `check` gives a value; the deadline only stops a wait that would never end."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'no {what} within {WAIT_S} s')
        time.sleep(0.2)


def signed(address):
    """The signed address as the service returned it: its origin is the base, its last segment the path, its query unchanged.

    `ignore_operation_servers`: otherwise the storage operations go to the contract's path-level
    server, the local development address, whatever the configuration's host.
    """
    url = urllib.parse.urlsplit(address)
    storage = StorageApi(ApiClient(Configuration(host=f'{url.scheme}://{url.netloc}', ignore_operation_servers=True)))
    return storage, urllib.parse.unquote(url.path.rsplit('/', 1)[1]), dict(urllib.parse.parse_qsl(url.query))


def body_of(response):
    """The raw body of a `*_without_preload_content` call, for answers the generated method cannot read."""
    data = response.data
    if response.status != 200:
        raise AssertionError(f'HTTP {response.status}: {data.decode("utf-8", "replace")}')
    return data


def mug(name):
    return ItemPayload(external_system='erp', external_id=ITEM_ID, name=name, price=9.5,
                       media=[MediaInput(url=os.environ['CATALOG_IMAGE_URL'])])


def event_of(event_type):
    events = EVENTS.list_events(type=event_type, resource_id=ITEM_ID, limit=10).data.events
    return events[0] if events else None


def upsert_creates():
    outcome = ITEMS.upsert_item(mug('Mug')).data.outcome
    expect(outcome == UpsertOutcome.CREATED, f'outcome {outcome}')


def list_lists():
    items = ITEMS.list_items(limit=50).data.items
    expect(any(item.external_id == ITEM_ID for item in items), 'the item is not listed')


def newer_answer_reads():
    answer = json.loads(body_of(ITEMS.get_item_without_preload_content('erp', ITEM_ID)))
    answer['fieldAddedLater'] = True
    answer['data']['fieldAddedLater'] = 'a newer service sends it'
    answer['data']['media'][0]['role'] = 'a-role-added-later'
    item = GetItem200Response.from_json(json.dumps(answer)).data
    expect(item.external_id == ITEM_ID, 'the item did not read back')
    role = item.media[0].role
    expect(role not in (MediaRole.PRIMARY, MediaRole.GALLERY) and role.value == 'a-role-added-later', f'role {role!r}')


IMPORT_LINES = [json.dumps({'externalSystem': 'erp', 'externalId': f'{RUN}-line-{n}', 'name': f'Line {n}'}) for n in (1, 2, 3)]
# Without `name`: the line fails, and comes back byte for byte from getImportFailedLines.
BAD_LINE = json.dumps({'externalSystem': 'erp', 'externalId': f'{RUN}-line-4'})
job_id = None


def import_completes():
    global job_id
    file = ('\n'.join([*IMPORT_LINES, BAD_LINE]) + '\n').encode()
    created = IMPORTS.create_import(CreateImportRequest(file_size_bytes=len(file))).data
    storage, storage_path, query = signed(created.upload_url)
    stored = storage.upload_import_file(storage_path, int(query['expires']), query['signature'], file).data
    expect(stored.size_bytes == len(file), f'stored {stored.size_bytes} bytes of {len(file)}')
    IMPORTS.start_import(created.job_id)

    def finished():
        current = IMPORTS.get_import(created.job_id).data
        return None if current.status in (ImportStatus.QUEUED, ImportStatus.PROCESSING) else current
    job = until('finished import', finished)
    counts = job.counts
    expect(job.status == ImportStatus.COMPLETED_WITH_ERRORS and counts.succeeded == 3 and counts.failed == 1,
           f'job {job.status}, counts {counts.to_json()}')
    job_id = created.job_id


def results_read():
    """The generated get_import_results would refuse `application/x-ndjson`: read the body raw, each line with the model."""
    expect(job_id is not None, 'no finished import')
    lines = body_of(IMPORTS.get_import_results_without_preload_content(job_id)).decode().splitlines()
    results = [ImportLineResult.from_json(line) for line in lines]
    statuses = [(result.line_number, result.status) for result in results]
    expect(statuses == [(1, 'created'), (2, 'created'), (3, 'created'), (4, 'failed')], f'results {statuses}')
    failed = body_of(IMPORTS.get_import_failed_lines_without_preload_content(job_id))
    expect(failed == f'{BAD_LINE}\n'.encode(), f'failed lines {failed!r}')


def events_read():
    until('item.created event', lambda: event_of(EventType.ITEM_DOT_CREATED))
    ITEMS.upsert_item(mug('Large mug'))
    updated = until('item.updated event', lambda: event_of(EventType.ITEM_DOT_UPDATED))
    changed = ItemUpdatedData.from_dict(updated.data).changed_fields
    expect('name' in changed, f'changedFields {changed}')


def image_reads_back():
    def ingested():
        media = ITEMS.get_item('erp', ITEM_ID).data.media[0]
        expect(media.status != MediaStatus.FAILED, f'ingestion failed: {media.failure}')
        return media if media.status == MediaStatus.INGESTED else None
    media = until('ingested image', ingested)
    storage, storage_path, query = signed(media.stored_url)
    image = storage.download_stored_object(storage_path, int(query['expires']), query['type'], query['signature'])
    with open(os.environ['CATALOG_IMAGE_FILE'], 'rb') as file:
        original = file.read()
    expect(image == original, f'got {len(image)} bytes, the original has {len(original)}')


STEPS = [
    ('upsertItem creates an item naming an image', upsert_creates),
    ('listItems lists it', list_lists),
    ('an answer with fields and enum values added later still reads', newer_answer_reads),
    ('an import uploaded to its uploadUrl completes, one line failed', import_completes),
    ('getImportResults and getImportFailedLines read as JSONL', results_read),
    ("listEvents has item.created, and item.updated's data reads as ItemUpdatedData", events_read),
    ('downloadStoredObject returns the stored image byte for byte', image_reads_back),
]


def main():
    failed = 0
    for name, work in STEPS:
        try:
            work()
            print(f'ok - {name}')
        except ApiException as error:
            failed += 1
            print(f'not ok - {name}: HTTP {error.status} {error.body}')
        except Exception as error:  # a step's failure is reported and the next step still runs
            failed += 1
            print(f'not ok - {name}: {type(error).__name__}: {error}')
    print(f'python client: {len(STEPS) - failed} of {len(STEPS)} steps passed')
    raise SystemExit(1 if failed else 0)


main()
