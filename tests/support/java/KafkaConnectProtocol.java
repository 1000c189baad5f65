// Writes the Connect group protocol's bytes as Kafka's ConnectProtocol (version 0, connect.protocol=eager)
// and IncrementalCooperativeConnectProtocol (versions 1 and 2) write them through their Schemas, with the
// types of org.apache.kafka.common.protocol.types: INT16/INT32/INT64 big-endian, STRING an int16 length
// and UTF-8, ArrayOf an int32 count and the elements, NULLABLE_BYTES an int32 length (-1: null) and bytes.
//
//   java KafkaConnectProtocol metadata VERSION URL CONFIG_OFFSET [ALLOCATION_HEX | null]
//       header {version}, CONFIG_STATE_V0|V1 {url, config_offset}, and from version 1 ALLOCATION_V1
//       {allocation}
//   java KafkaConnectProtocol assignment VERSION ERROR LEADER LEADER_URL CONFIG_OFFSET ASSIGNED [REVOKED DELAY]
//       header {version}, ASSIGNMENT_V0 {error, leader, leader_url, config_offset, assignment} and from
//       version 1 ASSIGNMENT_V1's {revoked, scheduled_delay}; a work list is "connector:task,task;other:-1"
//       (task -1 the connector itself, as ConnectProtocol.CONNECTOR_TASK), "" for none
//
// Prints the bytes as lower-case hex.
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public class KafkaConnectProtocol {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    private void int16(int value) { out.writeBytes(ByteBuffer.allocate(2).putShort((short) value).array()); }
    private void int32(int value) { out.writeBytes(ByteBuffer.allocate(4).putInt(value).array()); }
    private void int64(long value) { out.writeBytes(ByteBuffer.allocate(8).putLong(value).array()); }

    private void string(String value) {
        byte[] raw = value.getBytes(StandardCharsets.UTF_8);
        int16(raw.length);
        out.writeBytes(raw);
    }

    private void nullableBytes(byte[] value) {
        if (value == null) {
            int32(-1);
            return;
        }
        int32(value.length);
        out.writeBytes(value);
    }

    // ArrayOf(CONNECTOR_ASSIGNMENT) {connector: STRING, tasks: ArrayOf(INT32)}
    private void work(String spec) {
        String[] connectors = spec.isEmpty() ? new String[0] : spec.split(";");
        int32(connectors.length);
        for (String connector : connectors) {
            String[] parts = connector.split(":", 2);
            string(parts[0]);
            String[] tasks = parts[1].split(",");
            int32(tasks.length);
            for (String task : tasks) int32(Integer.parseInt(task));
        }
    }

    public static void main(String[] args) {
        KafkaConnectProtocol writer = new KafkaConnectProtocol();
        int version = Integer.parseInt(args[1]);
        writer.int16(version);
        if (args[0].equals("metadata")) {
            writer.string(args[2]);
            writer.int64(Long.parseLong(args[3]));
            if (version >= 1) writer.nullableBytes(args[4].equals("null") ? null : HexFormat.of().parseHex(args[4]));
        } else {
            writer.int16(Integer.parseInt(args[2]));
            writer.string(args[3]);
            writer.string(args[4]);
            writer.int64(Long.parseLong(args[5]));
            writer.work(args[6]);
            if (version >= 1) {
                writer.work(args[7]);
                writer.int32(Integer.parseInt(args[8]));
            }
        }
        System.out.println(HexFormat.of().formatHex(writer.out.toByteArray()));
    }
}
