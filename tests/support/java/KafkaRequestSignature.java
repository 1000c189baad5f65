// Signs a request body as Kafka Connect's InternalRequestSignature.addToRequest does: a javax.crypto.Mac
// of the algorithm, initialised with the session key, over the body; base64 for X-Connect-Authorization.
//
//   java KafkaRequestSignature ALGORITHM KEY_BASE64 BODY    (prints the header's value)
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class KafkaRequestSignature {
    public static void main(String[] args) throws Exception {
        Mac mac = Mac.getInstance(args[0]);
        mac.init(new SecretKeySpec(Base64.getDecoder().decode(args[1]), args[0]));
        byte[] signature = mac.doFinal(args[2].getBytes(StandardCharsets.UTF_8));
        System.out.println(Base64.getEncoder().encodeToString(signature));
    }
}
