// Writes and reads a standalone worker's offsets file exactly as Kafka Connect's
// FileOffsetBackingStore does (save(): an ObjectOutputStream writing one
// HashMap<byte[], byte[]>; load(): an ObjectInputStream reading it back and
// refusing anything but a HashMap). For tests of connectd against Kafka's format.
//
//   java KafkaOffsetsFile write FILE KEY VALUE [KEY VALUE ...]   (VALUE "null": a null value)
//   java KafkaOffsetsFile read FILE                              (the class, then KEY<TAB>VALUE lines, sorted)
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class KafkaOffsetsFile {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("write")) {
            Map<byte[], byte[]> raw = new HashMap<>();
            for (int i = 2; i + 1 < args.length; i += 2) {
                byte[] value = args[i + 1].equals("null") ? null : args[i + 1].getBytes(StandardCharsets.UTF_8);
                raw.put(args[i].getBytes(StandardCharsets.UTF_8), value);
            }
            try (ObjectOutputStream os = new ObjectOutputStream(new FileOutputStream(args[1]))) {
                os.writeObject(raw);
            }
        } else {
            try (ObjectInputStream is = new ObjectInputStream(new FileInputStream(args[1]))) {
                Object obj = is.readObject();
                if (!(obj instanceof HashMap))
                    throw new IllegalStateException("Expected HashMap but found " + obj.getClass());
                @SuppressWarnings("unchecked")
                Map<byte[], byte[]> raw = (Map<byte[], byte[]>) obj;
                List<String> lines = new ArrayList<>();
                for (Map.Entry<byte[], byte[]> entry : raw.entrySet()) {
                    String value = entry.getValue() == null ? "null" : new String(entry.getValue(), StandardCharsets.UTF_8);
                    lines.add(new String(entry.getKey(), StandardCharsets.UTF_8) + "\t" + value);
                }
                Collections.sort(lines);
                System.out.println(obj.getClass().getName());
                for (String line : lines) System.out.println(line);
            }
        }
    }
}
