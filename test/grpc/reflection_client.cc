#include "test/grpc/reflection_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"

namespace leash::testing {
namespace {

constexpr char kMethod[] = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
// ServerReflectionRequest.list_services; ServerReflectionResponse.list_services_response;
// ListServiceResponse.service; ServiceResponse.name.
constexpr int kListServicesField = 7;
constexpr int kListServicesResponseField = 6;
constexpr int kServiceField = 1;
constexpr int kNameField = 1;

std::string EncodeListServicesRequest() {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
      kListServicesField, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint32(1);
  coded.WriteRaw("*", 1);
  coded.Trim();
  return out;
}

const google::protobuf::UnknownField* FindField(const google::protobuf::UnknownFieldSet& set,
                                                int number) {
  for (int i = 0; i < set.field_count(); ++i) {
    if (set.field(i).number() == number) return &set.field(i);
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListServicesByReflection(const std::string& socket_path) {
  auto channel =
      grpc::CreateChannel(absl::StrCat("unix:", socket_path), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  void* tag = nullptr;
  bool ok = false;
  auto call = stub.PrepareCall(&context, kMethod, &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  if (!cq.Next(&tag, &ok) || !ok) return absl::UnavailableError("reflection call did not start");

  const std::string request = EncodeListServicesRequest();
  grpc::Slice slice(request);
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  if (!cq.Next(&tag, &ok) || !ok) return absl::UnavailableError("reflection request not sent");
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(3));
  if (!cq.Next(&tag, &ok) || !ok) return absl::UnavailableError("no reflection response");
  call->WritesDone(reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }

  std::vector<grpc::Slice> slices;
  if (!in.Dump(&slices).ok()) return absl::InternalError("unreadable reflection response");
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  google::protobuf::UnknownFieldSet response;
  if (!response.ParseFromString(bytes)) return absl::InternalError("undecodable reflection response");
  const google::protobuf::UnknownField* list = FindField(response, kListServicesResponseField);
  if (list == nullptr) return absl::InternalError("reflection response has no service list");
  google::protobuf::UnknownFieldSet services;
  services.ParseFromString(list->length_delimited());
  std::vector<std::string> names;
  for (int i = 0; i < services.field_count(); ++i) {
    if (services.field(i).number() != kServiceField) continue;
    google::protobuf::UnknownFieldSet service;
    service.ParseFromString(services.field(i).length_delimited());
    if (const google::protobuf::UnknownField* name = FindField(service, kNameField)) {
      names.push_back(name->length_delimited());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace leash::testing
