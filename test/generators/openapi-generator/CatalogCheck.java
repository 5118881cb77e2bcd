// A client team's program on the Java (okhttp-gson) client that openapi-generator makes from
// openapi.yaml, run by test/generators/openapi-generator.ts against a started service: upsert,
// list, an answer from a newer service, import through the signed upload address with its results
// and failed lines (JSONL), events, and a stored image read back.
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.openapitools.client.ApiClient;
import org.openapitools.client.ApiException;
import org.openapitools.client.api.EventsApi;
import org.openapitools.client.api.ImportsApi;
import org.openapitools.client.api.ItemsApi;
import org.openapitools.client.api.StorageApi;
import org.openapitools.client.model.CreateImportRequest;
import org.openapitools.client.model.EventEnvelope;
import org.openapitools.client.model.EventType;
import org.openapitools.client.model.GetItem200Response;
import org.openapitools.client.model.ImportJob;
import org.openapitools.client.model.ImportLineResult;
import org.openapitools.client.model.ImportStatus;
import org.openapitools.client.model.Item;
import org.openapitools.client.model.ItemMedia;
import org.openapitools.client.model.ItemPayload;
import org.openapitools.client.model.ItemUpdatedData;
import org.openapitools.client.model.ItemUpdatedEvent;
import org.openapitools.client.model.MediaInput;
import org.openapitools.client.model.MediaRole;
import org.openapitools.client.model.MediaStatus;
import org.openapitools.client.model.UpsertOutcome;

public class CatalogCheck {
  static final String RUN = setting("CATALOG_RUN");
  static final long WAIT_MS = Long.parseLong(setting("CATALOG_WAIT_MS"));
  static final String ITEM_ID = RUN + "-mug";
  static final ApiClient CLIENT = new ApiClient();
  static final ItemsApi ITEMS = new ItemsApi(CLIENT);
  static final ImportsApi IMPORTS = new ImportsApi(CLIENT);
  static final EventsApi EVENTS = new EventsApi(CLIENT);
  // Without `name`: the line fails, and comes back byte for byte from getImportFailedLines.
  static final String BAD_LINE = "{\"externalSystem\":\"erp\",\"externalId\":\"" + RUN + "-line-4\"}";
  static UUID finishedJob;

  interface Step { void run() throws Exception; }

  static String setting(String name) {
    String value = System.getenv(name);
    if (value == null || value.isEmpty()) throw new IllegalStateException(name + " is not set");
    return value;
  }

  static void expect(boolean condition, String message) {
    if (!condition) throw new AssertionError(message);
  }

  /** Polls until `check` gives a value; the deadline only stops a wait that would never end. */
  static <T> T until(String what, Callable<T> check) throws Exception {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    for (;;) {
      T value = check.call();
      if (value != null) return value;
      if (System.currentTimeMillis() > deadline) throw new AssertionError("no " + what + " within " + WAIT_MS + " ms");
      Thread.sleep(200);
    }
  }

  /** The signed address as the service returned it: its origin is the base, its last segment the path, its query unchanged. */
  record Signed(StorageApi storage, String storagePath, Map<String, String> query) {
    static Signed of(URI address) {
      StorageApi storage = new StorageApi(CLIENT);
      storage.setCustomBaseUrl(address.getScheme() + "://" + address.getRawAuthority());
      String path = address.getRawPath();
      Map<String, String> query = new LinkedHashMap<>();
      for (String pair : address.getRawQuery().split("&")) {
        String[] parts = pair.split("=", 2);
        query.put(parts[0], URLDecoder.decode(parts[1], StandardCharsets.UTF_8));
      }
      return new Signed(storage, URLDecoder.decode(path.substring(path.lastIndexOf('/') + 1), StandardCharsets.UTF_8), query);
    }
    long expires() { return Long.parseLong(query.get("expires")); }
  }

  static ItemPayload mug(String name) {
    return new ItemPayload().externalSystem("erp").externalId(ITEM_ID).name(name).price(new java.math.BigDecimal("9.5"))
        .media(List.of(new MediaInput().url(URI.create(setting("CATALOG_IMAGE_URL")))));
  }

  /** An answer's body exactly as the service sent it, for the steps that read it with a model themselves. */
  static JsonObject raw(okhttp3.Call call) throws Exception {
    try (okhttp3.Response response = call.execute()) {
      return JsonParser.parseString(response.body().string()).getAsJsonObject();
    }
  }

  static EventEnvelope eventOf(EventType type) throws ApiException {
    List<EventEnvelope> events = EVENTS.listEvents(10, null, null, type, ITEM_ID, null, null, null).getData().getEvents();
    return events.isEmpty() ? null : events.get(0);
  }

  public static void main(String[] args) {
    CLIENT.setBasePath(setting("CATALOG_API_URL"));
    CLIENT.setBearerToken(setting("CATALOG_API_KEY"));
    Map<String, Step> steps = new LinkedHashMap<>();
    steps.put("upsertItem creates an item naming an image", () -> {
      UpsertOutcome outcome = ITEMS.upsertItem(mug("Mug")).getData().getOutcome();
      expect(outcome == UpsertOutcome.CREATED, "outcome " + outcome);
    });
    steps.put("listItems lists it", () -> {
      List<Item> items = ITEMS.listItems(50, null, null, null, null, null, null, null).getData().getItems();
      expect(items.stream().anyMatch((item) -> item.getExternalId().equals(ITEM_ID)), "the item is not listed");
    });
    steps.put("an answer with fields and enum values added later still reads", () -> {
      JsonObject answer = raw(ITEMS.getItemCall("erp", ITEM_ID, null));
      answer.addProperty("fieldAddedLater", true);
      JsonObject item = answer.getAsJsonObject("data");
      item.addProperty("fieldAddedLater", "a newer service sends it");
      item.getAsJsonArray("media").get(0).getAsJsonObject().addProperty("role", "a-role-added-later");
      Item read = GetItem200Response.fromJson(answer.toString()).getData();
      expect(read.getExternalId().equals(ITEM_ID), "the item did not read back");
      expect(read.getMedia().get(0).getRole() == MediaRole.UNKNOWN_DEFAULT_OPEN_API, "role " + read.getMedia().get(0).getRole());
    });
    steps.put("an import uploaded to its uploadUrl completes, one line failed", () -> {
      List<String> lines = new ArrayList<>();
      for (int n = 1; n <= 3; n++) {
        lines.add("{\"externalSystem\":\"erp\",\"externalId\":\"" + RUN + "-line-" + n + "\",\"name\":\"Line " + n + "\"}");
      }
      lines.add(BAD_LINE);
      Path file = Files.createTempFile("catalog-import-", ".jsonl");
      Files.writeString(file, String.join("\n", lines) + "\n");
      int size = (int) Files.size(file);
      var created = IMPORTS.createImport(new CreateImportRequest().fileSizeBytes(size), null).getData();
      Signed upload = Signed.of(created.getUploadUrl());
      int stored = upload.storage().uploadImportFile(upload.storagePath(), upload.expires(), upload.query().get("signature"), file.toFile())
          .getData().getSizeBytes();
      expect(stored == size, "stored " + stored + " bytes of " + size);
      IMPORTS.startImport(created.getJobId());
      ImportJob job = until("finished import", () -> {
        ImportJob current = IMPORTS.getImport(created.getJobId()).getData();
        return Arrays.asList(ImportStatus.QUEUED, ImportStatus.PROCESSING).contains(current.getStatus()) ? null : current;
      });
      expect(job.getStatus() == ImportStatus.COMPLETED_WITH_ERRORS && job.getCounts().getSucceeded() == 3 && job.getCounts().getFailed() == 1,
          "job " + job.getStatus() + ", counts " + job.getCounts());
      Files.delete(file);
      finishedJob = created.getJobId();
    });
    steps.put("getImportResults and getImportFailedLines read as JSONL", () -> {
      expect(finishedJob != null, "no finished import");
      List<ImportLineResult> results = new ArrayList<>();
      for (String line : IMPORTS.getImportResults(finishedJob).split("\n")) {
        if (!line.isEmpty()) results.add(ImportLineResult.fromJson(line));
      }
      String statuses = results.stream().map((result) -> result.getLineNumber() + ":" + result.getStatus().getValue()).collect(Collectors.joining(" "));
      expect(statuses.equals("1:created 2:created 3:created 4:failed"), "results " + statuses);
      String failed = IMPORTS.getImportFailedLines(finishedJob);
      expect(failed.equals(BAD_LINE + "\n"), "failed lines " + failed);
    });
    steps.put("listEvents has item.created, and item.updated reads as the webhook's ItemUpdatedEvent", () -> {
      until("item.created event", () -> eventOf(EventType.ITEM_CREATED));
      ITEMS.upsertItem(mug("Large mug"));
      until("item.updated event", () -> eventOf(EventType.ITEM_UPDATED));
      JsonObject page = raw(EVENTS.listEventsCall(10, null, null, EventType.ITEM_UPDATED, ITEM_ID, null, null, null, null));
      ItemUpdatedEvent event = ItemUpdatedEvent.fromJson(page.getAsJsonObject("data").getAsJsonArray("events").get(0).toString());
      List<ItemUpdatedData.ChangedFieldsEnum> changed = event.getData().getChangedFields();
      expect(changed.contains(ItemUpdatedData.ChangedFieldsEnum.NAME), "changedFields " + changed);
    });
    steps.put("downloadStoredObject returns the stored image byte for byte", () -> {
      ItemMedia media = until("ingested image", () -> {
        ItemMedia current = ITEMS.getItem("erp", ITEM_ID).getData().getMedia().get(0);
        expect(current.getStatus() != MediaStatus.FAILED, "ingestion failed: " + current.getFailure());
        return current.getStatus() == MediaStatus.INGESTED ? current : null;
      });
      Signed download = Signed.of(media.getStoredUrl());
      File image = download.storage().downloadStoredObject(download.storagePath(), download.expires(), download.query().get("type"),
          download.query().get("signature"), null);
      byte[] bytes = Files.readAllBytes(image.toPath());
      byte[] original = Files.readAllBytes(Path.of(setting("CATALOG_IMAGE_FILE")));
      expect(Arrays.equals(bytes, original), "got " + bytes.length + " bytes, the original has " + original.length);
      Files.delete(image.toPath());
    });
    int failed = 0;
    for (Map.Entry<String, Step> step : steps.entrySet()) {
      try {
        step.getValue().run();
        System.out.println("ok - " + step.getKey());
      } catch (ApiException error) {
        failed++;
        System.out.println("not ok - " + step.getKey() + ": HTTP " + error.getCode() + " " + error.getResponseBody());
      } catch (Throwable error) {
        failed++;
        System.out.println("not ok - " + step.getKey() + ": " + error);
      }
    }
    System.out.println("java client: " + (steps.size() - failed) + " of " + steps.size() + " steps passed");
    System.exit(failed == 0 ? 0 : 1);
  }
}
